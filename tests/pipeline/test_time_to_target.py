"""Time to target, its trends and ratios, and summaries on a non-uniform x (a simulated clock): known answers."""

import math
import zlib

import numpy as np
import pandas as pd
import pytest

from fedrepro.claims.checks.final_values import time_ratio_by_group, time_to_target, time_to_target_trend
from fedrepro.claims.checks.learning_curves import oscillation_falls
from fedrepro.claims.data import ClaimData
from fedrepro.claims.validation import validate_claims
from fedrepro.errors import ConfigError
from fedrepro.results.summaries import auc_fin_per_seed, mean_curve, seed_summaries
from fedrepro.results.summaries import time_to_target as t2t_summary

LABELS = ["figure", "panel", "curve", "method", "run_id"]
# per method: seed -> (virtual_time, test_accuracy); the seeds log at different times
RUNS = {
    "fast": {0: ([0, 1.5, 4.0, 9.0], [0.1, 0.5, 0.8, 0.95]), 1: ([0, 2.0, 5.0, 9.0], [0.1, 0.6, 0.9, 0.97])},
    "slow": {0: ([0, 3.0, 6.0, 12.0], [0.1, 0.4, 0.75, 0.85]), 1: ([0, 3.0, 6.0, 12.0], [0.1, 0.5, 0.7, 0.8])},
}


def _table(runs=RUNS, panel: str = "p") -> pd.DataFrame:
    rows = [{"figure": "t", "panel": panel, "curve": m, "method": m, "run_id": f"{panel}-{m}", "seed": s,
             "virtual_time": t, "round": i, "test_accuracy": a, "train_loss": 1 - a, "diverged": not np.isfinite(a)}
            for m, seeds in runs.items() for s, (times, accs) in seeds.items()
            for i, (t, a) in enumerate(zip(times, accs))]
    return pd.DataFrame(rows)


def _repeat(table: pd.DataFrame, times: int = 3) -> pd.DataFrame:
    """The seeds of `table` repeated `times` times as new seeds: the same per-seed effects, more of them, so
    that the checks' tests (claims/checks/inference.py) can decide: a sign test (a censored or diverged seed, or
    seeds that tie) needs 5 seeds, and 2 seeds that differ give the t-test its spread."""
    width = int(table["seed"].max()) + 1
    return pd.concat([table.assign(seed=table["seed"] + k * width) for k in range(times)], ignore_index=True)


def _check(table, a="fast", b="slow", **params):
    params = {"metric": "test_accuracy", "higher": True, "x": "virtual_time", "per": ["panel"], **params}
    return time_to_target(ClaimData(table, LABELS), a={"method": a}, b={"method": b}, **params)


def test_the_seed_mean_curve_carries_each_seed_forward_on_the_union_of_times():
    run = _table()[lambda t: t["method"] == "fast"]
    xs, mean = mean_curve(run, "test_accuracy", "virtual_time")
    np.testing.assert_allclose(xs, [0, 1.5, 2.0, 4.0, 5.0, 9.0])
    np.testing.assert_allclose(mean, [0.1, 0.3, 0.55, 0.7, 0.85, 0.96])


def test_time_to_target_of_the_mean_curve_and_the_seed_median():
    times = t2t_summary(_table(), LABELS, "test_accuracy", 0.7, True, "virtual_time").set_index("method")
    assert times.loc["fast", "t_target"] == 4.0 and times.loc["slow", "t_target"] == 6.0
    median = t2t_summary(_table(), LABELS, "test_accuracy", 0.7, True, "virtual_time", seeds="median")
    assert median.set_index("method").loc["fast", "t_target"] == 4.5  # seeds reach it at 4 and 5
    loss = t2t_summary(_table(), LABELS, "train_loss", 0.3, False, "virtual_time").set_index("method")
    assert loss.loc["fast", "t_target"] == 4.0  # a loss reaches its target from above
    # every run setting is a label column, `seeds` too: the summary's own count of seeds is the one kept
    with_setting = t2t_summary(_table().assign(seeds=7), LABELS + ["seeds"], "test_accuracy", 0.7, True,
                               "virtual_time")
    assert (with_setting["seeds"] == 2).all()
    never = t2t_summary(_table(), LABELS, "test_accuracy", 0.9, True, "virtual_time").set_index("method")
    assert never.loc["fast", "t_target"] == 9.0 and math.isinf(never.loc["slow", "t_target"])


def test_time_to_target_check_pass_fail_and_undecided():
    table = _repeat(_table())  # 6 seeds: fast at 4 and 5 (three times each) against slow at 6
    assert _check(table, target=0.7)[0] == "PASS"
    assert _check(table, a="slow", b="fast", target=0.7)[0] == "FAIL"
    assert _check(table, target=0.7, factor=0.5)[0] == "FAIL"  # 4 is not under half of 6
    assert _check(table, target=0.9)[0] == "PASS"  # the slow curve never reaches it: inf
    # ... which 2 seeds cannot show: a sign test of 2 seeds has p >= 1/4
    assert _check(_table(), target=0.9)[0] == "INCONCLUSIVE"
    assert _check(table, a="slow", b="fast", target=0.9)[0] == "FAIL"
    status, measured, *_ = _check(table, target=0.99)  # neither reaches it: the cell is undecided
    assert status == "INCONCLUSIVE" and "undecided" in measured and measured.startswith("0/0")
    assert _check(table, metric="train_loss", higher=False, target=0.3)[0] == "PASS"
    assert _check(table, a="absent", target=0.7)[0] == "INCONCLUSIVE"


def test_reached_times_inside_the_paired_seed_spread_are_open():
    # the seed-mean curves reach 0.7 at 4 and 6, but fast's own seeds reach it at 2 and 8 (slow's at 6 and 6):
    # per-seed log10 ratios +0.48 and -0.12: the paired t-test over 6 seeds (3 x each) does not decide
    noisy = {"fast": {0: ([0, 2.0, 4.0, 9.0], [0.1, 0.8, 0.9, 0.95]), 1: ([0, 4.0, 8.0, 9.0], [0.1, 0.5, 0.75, 0.9])},
             "slow": RUNS["slow"]}
    result = _check(_repeat(_table(noisy)), target=0.7)
    assert result.status == "INCONCLUSIVE" and "vs slow 6 (open: t(5) = " in result.measured
    assert result.p_pass > 0.05 and result.p_fail > 0.05
    decided = _check(_repeat(_table()), target=0.7)  # seeds at 4 and 5 vs 6 and 6: decided
    assert decided.status == "PASS" and decided.p_pass <= 0.05


def test_time_to_target_per_panel_targets_and_a_diverged_seed():
    table = _repeat(pd.concat([_table(panel="easy"), _table(panel="hard")], ignore_index=True))
    status, measured, *_ = _check(table, target={"easy": 0.7, "hard": 0.9})
    assert status == "PASS" and "[easy] fast 4 vs slow 6" in measured and "[hard] fast 9 vs slow >12" in measured
    wild = {**RUNS, "fast": {**RUNS["fast"], 1: ([0, 2.0, 5.0, 9.0], [0.1, 0.6, float("nan"), float("nan")])}}
    # half the seeds diverge (never reaching it), half win: the per-seed signs decide neither way
    assert _check(_repeat(_table(wild)), target=0.7)[0] == "INCONCLUSIVE"
    all_wild = {**RUNS, "fast": {s: ([0, 2.0, 5.0], [0.1, 0.6, float("nan")]) for s in (0, 1)}}
    assert _check(_repeat(_table(all_wild)), target=0.7)[0] == "FAIL"  # every seed diverges: a sure loss


def test_summaries_window_is_a_fraction_of_a_non_uniform_x_range():
    table = pd.DataFrame({"figure": "t", "panel": "p", "curve": "c", "method": "m", "run_id": "r", "seed": 0,
                          "virtual_time": [0.0, 1.0, 9.0, 10.0], "loss": [4.0, 3.0, 2.0, 1.0], "diverged": False})
    final = seed_summaries(table, "loss", 0.1, [0.5], x="virtual_time").iloc[0]
    assert final["final"] == pytest.approx(math.sqrt(2.0))  # geometric mean of the points at x >= 9
    assert final["T_0.5"] == 9.0 and final["last_x"] == 10.0
    fin = auc_fin_per_seed(table, LABELS, "loss", x="virtual_time").iloc[0]
    assert fin["fin"] == 1.0 and fin["auc"] == 2.5  # FIN: x in (9, 10]; AUC: the mean over logged points


def test_claims_validation_names_a_bad_choice_or_parameter():
    claim = {"id": "T1", "check": "time_to_target", "a": {}, "b": {}, "per": [], "metric": "test_accuracy",
             "target": 0.9, "higher": True}
    validate_claims({"claims": [claim]}, "t.yaml")
    with pytest.raises(ConfigError, match="seeds: 'average' is not one of mean, median"):
        validate_claims({"claims": [{**claim, "seeds": "average"}]}, "t.yaml")
    with pytest.raises(ConfigError, match="'targte' is not a parameter"):
        validate_claims({"claims": [{**claim, "targte": 0.9}]}, "t.yaml")
    with pytest.raises(ConfigError, match="needs 'target'"):
        validate_claims({"claims": [{k: v for k, v in claim.items() if k != "target"}]}, "t.yaml")


# the seeds' times around a run's time t: the median at t (so the seed-mean curve reaches the target at t), the
# others a few % off; 7 seeds, so that a step a censored time makes a sign test decides (1/2^7, Holm over 3 steps)
SPREAD = (0.96, 0.97, 0.99, 1.0, 1.01, 1.03, 1.04)


def _seed_rows(n, t: float, seed: int, run: str = "r", extra: dict | None = None) -> list[dict]:
    """One seed of run n, its curve reaching accuracy 1 at time t (inf: never; censored at 100)."""
    reached = math.isfinite(t)
    return [{"figure": "t", "panel": "p", "curve": f"n={n}", "method": "m", "run_id": f"{run}{n}", "seed": seed,
             "n": n, "virtual_time": x, "test_accuracy": acc, "diverged": False, **(extra or {})}
            for x, acc in ((0.0, 0.0), (t if reached else 50.0, 1.0 if reached else 0.0),
                           (100.0, 1.0 if reached else 0.0))]


def _reaching(times: dict, extra: dict | None = None, run: str = "r") -> pd.DataFrame:
    """One run per key of `times` (a value of n), each seed reaching accuracy 1 at that time x its own factor of
    SPREAD, in an order drawn per run (a generator seeded by the run's id): independent seed noise, so that the
    per-seed effects of two runs differ and their t-test decides (seeds that tied would be a sign test)."""
    rows = []
    for n, t in times.items():
        order = np.random.default_rng(zlib.crc32(f"{run}{n}".encode())).permutation(len(SPREAD))
        rows += [row for seed, k in enumerate(order) for row in _seed_rows(n, t * SPREAD[k], seed, run, extra)]
    return pd.DataFrame(rows)


def _trend(table, **params):
    params = {"select": {}, "per": ["panel"], "along": "n", "order": [10, 20, 40, 80], "metric": "test_accuracy",
              "target": 0.5, "higher": True, "x": "virtual_time", "increasing": True, **params}
    return time_to_target_trend(ClaimData(table, LABELS + ["n"]), **params)


def test_time_to_target_trend_counts_inversions_and_ranks_never_as_slowest():
    rising = _reaching({10: 5.0, 20: 9.0, 40: 20.0, 80: math.inf})
    result = _trend(rising)
    assert result.status == "PASS" and "Spearman +1.00" in result.measured
    assert result.margin == pytest.approx(math.log10(9 / 5))  # the smallest step, 5 -> 9
    assert _trend(rising, increasing=False).status == "FAIL"
    bumpy = _reaching({10: 5.0, 20: 9.0, 40: 7.0, 80: 30.0})  # one step against the trend
    assert _trend(bumpy).status == "FAIL"
    assert _trend(bumpy, inversions=1).status == "PASS"
    assert _trend(bumpy, inversions=1).margin == pytest.approx(math.log10(9 / 5))
    result = _trend(_reaching({10: math.inf, 20: math.inf, 40: math.inf, 80: math.inf}))
    assert result.status == "INCONCLUSIVE" and "undecided" in result.measured
    assert _trend(_reaching({10: 5.0, 20: 9.0, 40: 20.0})).status == "INCONCLUSIVE"  # n = 80 missing


def test_time_ratio_by_group_compares_mean_speed_ups():
    def cell(n, t_a, t_b):
        a = _reaching({n: t_a}, run="a").assign(panel=f"n={n}", method="a", curve="A")
        b = _reaching({n: t_b}, run="b").assign(panel=f"n={n}", method="b", curve="B")
        return [a, b]

    def check(table):
        return time_ratio_by_group(ClaimData(table, LABELS + ["n"]), a={"method": "a"}, b={"method": "b"},
                                   per=["panel"], group="n", greater=[10, 20], than=[40, 80], metric="test_accuracy",
                                   target=0.5, higher=True, x="virtual_time")

    # ratios T(b)/T(a): 2 and 4 at small n (mean 3), 1 and 0.5 at large n (mean 0.75)
    table = pd.concat(cell(10, 5, 10) + cell(20, 5, 20) + cell(40, 10, 10) + cell(80, 20, 10), ignore_index=True)
    result = check(table)
    assert result.status == "PASS" and result.margin == pytest.approx(math.log10(3 / 0.75))
    flipped = pd.concat(cell(10, 10, 10) + cell(20, 10, 5) + cell(40, 5, 20) + cell(80, 5, 10), ignore_index=True)
    assert check(flipped).status == "FAIL"
    never = pd.concat(cell(10, 5, 10) + cell(40, math.inf, math.inf), ignore_index=True)
    assert check(never).status == "INCONCLUSIVE"  # the only large-n cell is undecided
    # B censored at 100 at n = 40: its ratio is > 100/10 = 10, above the small-n mean 3 whatever T(b) is (a sign
    # test of the 7 seeds) ...
    assert check(pd.concat(cell(10, 5, 10) + cell(20, 5, 20) + cell(40, 10, math.inf))).status == "FAIL"
    # ... but > 100/50 = 2 may lie either side of 3: open
    result = check(pd.concat(cell(10, 5, 10) + cell(20, 5, 20) + cell(40, 50, math.inf)))
    assert result.status == "INCONCLUSIVE" and "in [2, inf] (censored times)" in result.measured


def test_oscillation_falls_with_n():
    rng = np.random.default_rng(0)
    rows = []
    for n, noise in ((5, 0.08), (10, 0.04), (20, 0.02), (40, 0.01)):
        acc = 0.8 + noise * rng.standard_normal(40)
        rows += [{"figure": "t", "panel": "p", "curve": f"n={n}", "method": "m", "run_id": f"r{n}", "seed": s,
                  "n": n, "round": r, "test_accuracy": a + 0.001 * s, "diverged": False}
                 for s in (0, 1) for r, a in enumerate(acc)]
    table = pd.DataFrame(rows)

    def check(t):
        return oscillation_falls(ClaimData(t, LABELS + ["n"]), select={}, per=["panel"], along="n")

    result = check(table)
    assert result.status == "PASS" and result.margin == pytest.approx(1.0)  # Spearman -1
    reversed_n = table.assign(n=table["n"].map({5: 40, 10: 20, 20: 10, 40: 5}))
    assert check(reversed_n).status == "FAIL"
    assert check(table[table["n"] <= 10]).status == "INCONCLUSIVE"  # fewer than 3 curves


def test_the_trapezoid_area_weighs_points_by_the_x_they_span():
    # dense points early (x = 0, 1, 2) and one late (x = 10): the plain mean overweights the early values
    table = pd.DataFrame({"figure": "t", "panel": "p", "curve": "c", "method": "m", "run_id": "r", "seed": 0,
                          "time": [0.0, 1.0, 2.0, 10.0], "acc": [0.0, 0.0, 0.0, 1.0], "diverged": False})
    mean = auc_fin_per_seed(table, LABELS, "acc", True, x="time").iloc[0]["auc"]
    area = auc_fin_per_seed(table, LABELS, "acc", True, x="time", auc="trapezoid").iloc[0]["auc"]
    assert mean == 0.25 and area == pytest.approx(0.5 * 8 / 10)  # the ramp from x = 2 to 10, over the range 10


def test_time_to_target_pairs_each_curve_of_a_with_the_one_of_b():
    runs = {**RUNS, "mid": {0: ([0, 2.0, 5.0, 9.0], [0.1, 0.5, 0.72, 0.9]), 1: ([0, 2.0, 5.0, 9.0], [0.1, 0.5, 0.72, 0.9])}}
    table = _repeat(_table(runs))
    result = time_to_target(ClaimData(table, LABELS), a={"method": ["fast", "mid"]}, b={"method": "slow"},
                            per=["panel"], metric="test_accuracy", higher=True, x="virtual_time", target=0.7)
    assert result.status == "PASS" and result.measured.startswith("2/2")
    assert "[p, fast] T 4 vs slow 6" in result.measured and "[p, mid] T 5 vs slow 6" in result.measured
    late = time_to_target(ClaimData(table, LABELS), a={"method": ["fast", "slow"]}, b={"method": "mid"},
                          per=["panel"], metric="test_accuracy", higher=True, x="virtual_time", target=0.7)
    assert late.status == "FAIL" and late.measured.startswith("1/2")  # slow (6) is not before mid (5)


def test_a_censored_time_is_a_lower_bound_that_decides_only_when_it_settles_the_comparison():
    def short(end: float) -> dict:  # a run that stops at x = `end` without reaching 0.7 (censored there)
        return {s: ([0, end / 2, end], [0.1, 0.3, 0.5]) for s in (0, 1)}

    times = t2t_summary(_table({**RUNS, "short": short(5.0)}), LABELS, "test_accuracy", 0.7, True, "virtual_time")
    short_row = times.set_index("method").loc["short"]
    assert math.isinf(short_row["t_target"]) and short_row["t_lower"] == 5.0
    assert times.set_index("method").loc["slow", "t_lower"] == 6.0  # reached: the bound is the time itself
    # a censored seed's effect is known only by its sign: a sign test, so 6 seeds (_repeat; 2 have p >= 1/4)
    # not reached by 5 against slow's 6: T > 5 may still be < 6, so the data cannot decide however many seeds
    status, measured, *_ = _check(_repeat(_table({**RUNS, "short": short(5.0)})), a="short", target=0.7)
    assert status == "INCONCLUSIVE" and "short >5 vs slow 6" in measured and "open" in measured
    # not reached by 8: T > 8 >= 6 on every seed, a FAIL; and slow (6) beats a run censored at 8 on every seed
    assert _check(_repeat(_table({**RUNS, "short": short(8.0)})), a="short", target=0.7).status == "FAIL"
    assert _check(_repeat(_table({**RUNS, "short": short(8.0)})), a="slow", b="short", target=0.7).status == "PASS"
    # a diverged curve never reaches the target: its time is inf, not a bound
    wild = {**RUNS, "slow": {s: ([0, 3.0, 6.0], [0.1, 0.4, float("nan")]) for s in (0, 1)}}
    diverged = t2t_summary(_table(wild), LABELS, "test_accuracy", 0.9, True, "virtual_time").set_index("method")
    assert math.isinf(diverged.loc["slow", "t_lower"])
    assert _check(_repeat(_table(wild)), target=0.9).status == "PASS"  # fast reaches 0.9 at 9 < never


def test_censored_times_leave_a_trend_or_a_ratio_open_unless_their_bounds_decide():
    def censored(n: int, end: float) -> pd.DataFrame:  # run n stops at x = end below the target, every seed
        return pd.DataFrame([{"figure": "t", "panel": "p", "curve": f"n={n}", "method": "m", "run_id": f"r{n}",
                              "seed": s, "n": n, "virtual_time": x, "test_accuracy": 0.0, "diverged": False}
                             for s in range(len(SPREAD)) for x in (0.0, end)])

    base = _reaching({10: 5.0, 20: 9.0, 40: 20.0})
    # n = 80 not reached by 30: T > 30 >= 20 on every seed (a sign test of 7), the rising trend holds
    assert _trend(pd.concat([base, censored(80, 30.0)], ignore_index=True)).status == "PASS"
    # not reached by 15: T > 15 may be below 20, the last step is open and the trend undecided
    result = _trend(pd.concat([base, censored(80, 15.0)], ignore_index=True))
    assert result.status == "INCONCLUSIVE" and "1 step(s) open" in result.measured
    # ... unless an inversion is allowed anyway, or another step already breaks it
    assert _trend(pd.concat([base, censored(80, 15.0)], ignore_index=True), inversions=1).status == "PASS"
    bumpy = _reaching({10: 5.0, 20: 3.0, 40: 20.0})
    assert _trend(pd.concat([bumpy, censored(80, 15.0)], ignore_index=True)).status == "FAIL"


def test_a_trend_step_inside_the_paired_seed_spread_is_open():
    def seeded(times: dict) -> pd.DataFrame:  # per n, each seed's curve jumps to accuracy 1 at its own time
        return pd.DataFrame([row for n, ts in times.items() for s, t in enumerate(ts) for row in _seed_rows(n, t, s)])

    # seed-mean curves reach 0.5 at each n's first seed time: 4, 5, 20, 40, rising; but n = 10's seeds reach it
    # at 4, 12 and 6 and n = 20's at 5, 5 and 5, so the first step is not decided by its paired t-test
    result = _trend(seeded({10: (4.0, 12.0, 6.0), 20: (5.0, 5.0, 5.0), 40: (20.0, 22.0, 21.0),
                            80: (40.0, 44.0, 42.0)}))
    assert result.status == "INCONCLUSIVE" and "1 step(s) open: not decided by the seeds" in result.measured
    assert _trend(seeded({10: (4.0, 4.5, 4.2), 20: (5.0, 5.5, 5.3), 40: (20.0, 22.0, 21.0),
                          80: (40.0, 44.0, 42.0)})).status == "PASS"
