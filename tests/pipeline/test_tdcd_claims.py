"""The checks the TDCD claims added: `falls` (every run's final value below its first) and `time_win_ratio`
(C1': iterations to target of Q > 1 over Q = 1, against the time model's thresholds)."""

import numpy as np
import pandas as pd
import pytest

from fedrepro.claims.checks import CHECKS
from fedrepro.claims.checks.final_values import falls
from fedrepro.claims.checks.time_model import time_win_ratio
from fedrepro.claims.data import ClaimData
from fedrepro.vertical_time import time_win_threshold

LABELS = ["figure", "panel", "curve", "method", "run_id", "Q"]


def _table(curves: dict[int, list[float]], panel: str = "p", every: int = 10, seeds: int = 6) -> pd.DataFrame:
    """Each curve the same in every seed: the seeds tie on the grid of iterations, which the checks read by the
    sign test of the seeds (inference.effect_test: 3 tied seeds give 1/8, open), so 6 seeds: 1/2^6 decides a PASS,
    and a FAIL of one of two pairs (Holm: 2 x 1/2^6 < 5%)."""
    rows = [{"figure": "f", "panel": panel, "curve": f"Q = {q}", "method": "tdcd", "run_id": f"{panel}-{q}", "Q": q,
             "seed": s, "iteration": i * every, "test_accuracy": v, "train_loss": 2 - v, "diverged": not np.isfinite(v)}
            for q, values in curves.items() for i, v in enumerate(values) for s in range(seeds)]
    return pd.DataFrame(rows)


def _ratio(table, **params):
    params = {"metric": "test_accuracy", "higher": True, "target": 0.5, "t_comm": [10, 100], "per": ["panel"],
              "a": {"Q": [10, 30]}, "b": {"Q": 1}, **params}
    return time_win_ratio(ClaimData(table, LABELS), **params)


def test_time_win_ratio_compares_iterations_to_the_time_model_thresholds():
    # Q = 1 reaches 0.5 at iteration 10; Q = 10 at 70 (ratio 7 < 7.75); Q = 30 at 90 (ratio 9 < 15.5)
    table = _table({1: [0, 0.6, 0.7], 10: [0, 0, 0, 0, 0, 0, 0, 0.6], 30: [0] * 9 + [0.6]})
    result = _ratio(table)
    assert result.status == "PASS" and "7.75 (t_comm 10)" in result.measured and "27.4 (t_comm 100)" in result.measured
    assert result.margin == pytest.approx(np.log10(time_win_threshold(10, 10) / 7))
    # Q = 10 now needs 80 iterations: 8 > 7.75, it loses in time at t_comm = 10 (though not at 100: 9.71)
    slower = _table({1: [0, 0.6], 10: [0] * 8 + [0.6], 30: [0] * 9 + [0.6]})
    assert _ratio(slower).status == "FAIL"


def test_time_win_ratio_leaves_a_pair_undecided_when_neither_reaches_the_target():
    table = _table({1: [0, 0.1], 10: [0, 0.2], 30: [0, 0.6]})
    result = _ratio(table)
    assert "undecided" in result.measured and result.status == "PASS"  # Q = 30 reaches it, Q = 1 never: 0
    assert _ratio(_table({1: [0, 0.1], 10: [0, 0.2]}), a={"Q": 10}).status == "INCONCLUSIVE"


def test_falls_needs_every_selected_run_to_end_below_its_start():
    table = _table({1: [0.1, 0.5, 0.9], 10: [0.1, 0.3, 0.6]})
    data = ClaimData(table, LABELS)
    assert falls(data, select={}, metric="train_loss", x="iteration").status == "PASS"
    rising = _table({1: [0.1, 0.5, 0.9], 10: [0.5, 0.3, 0.2]})
    result = falls(ClaimData(rising, LABELS), select={}, metric="train_loss", x="iteration")
    assert result.status == "FAIL" and "Q = 10" in result.measured
    assert falls(ClaimData(rising, LABELS), select={"Q": 1}, metric="train_loss", x="iteration").status == "PASS"
    diverged = _table({1: [0.1, 0.5, np.nan]})
    assert falls(ClaimData(diverged, LABELS), select={}, metric="train_loss", x="iteration").status == "FAIL"
    assert {"falls", "time_win_ratio"} <= set(CHECKS)


def test_time_win_ratio_leaves_runs_that_start_at_the_target_undecided():
    result = _ratio(_table({1: [0.6, 0.7], 10: [0.6, 0.8]}), a={"Q": 10})
    assert result.status == "INCONCLUSIVE" and "both start at the target" in result.measured


def test_the_ledger_notes_the_stand_ins_of_a_claims_figures(tmp_path):
    from fedrepro.claims.data_notes import with_data_notes

    label = "synthetic-IHM stand-in (MIMIC-III not provided)"
    pd.DataFrame({"panel": ["p"], "data_source": [label]}).to_csv(tmp_path / "fig7.csv", index=False)
    pd.DataFrame({"panel": ["p"], "view": ["tdcd"]}).to_csv(tmp_path / "fig6.csv", index=False)
    ledger = pd.DataFrame({"claim_id": ["C4a", "C4b", "C8"], "figure": ["fig6", "fig7", np.nan],
                           "note": ["", "ruling.", np.nan]})
    tables = {name: pd.read_csv(tmp_path / f"{name}.csv") for name in ("fig6", "fig7")}
    notes = with_data_notes(ledger, tables)["note"].tolist()
    assert notes[1] == f"ruling. Data: {label}."
    assert notes[0] == "" and pd.isna(notes[2])  # real CIFAR-10; a claim without figures


def test_time_win_ratio_reads_a_censored_run_as_a_bound_on_the_ratio():
    # Q = 1 reaches 0.5 at iteration 40; Q = 10 not by its last iteration 60: n_10 / n_1 > 1.5, which says
    # nothing against the threshold 7.75 (t_comm 10): the pair is open, not failed
    table = _table({1: [0, 0, 0, 0, 0.6], 10: [0] * 7})
    result = _ratio(table, a={"Q": 10})
    assert result.status == "INCONCLUSIVE"
    assert "n/n_1 = >60/40 > 1.5 vs thresholds 7.75 (t_comm 10)" in result.measured and "does not decide" in result.measured
    # Q = 1 reaches it at iteration 10 and Q = 10 not by 90: n_10 / n_1 > 9 >= 7.75 on every seed, a FAIL once the
    # sign test of the seeds reaches 5%: not with 3 seeds (1/8), with 6
    beyond = {1: [0, 0.6], 10: [0] * 10}
    result = _ratio(_table(beyond, seeds=3), a={"Q": 10})
    assert result.status == "INCONCLUSIVE" and "(open: 3 equal seeds, sign 0+/3-/3)" in result.measured
    assert _ratio(_table(beyond), a={"Q": 10}).status == "FAIL"
    # Q = 10 reaches it at 20 and Q = 1 not by 40: n_10 / n_1 < 0.5, a sure PASS
    assert _ratio(_table({1: [0] * 5, 10: [0, 0, 0.6]}), a={"Q": 10}).status == "PASS"
