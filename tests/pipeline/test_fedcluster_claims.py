"""The FedCluster claim checks (means over seeds of AUC / FIN) on known inputs: PASS, FAIL, INCONCLUSIVE."""

import zlib

import numpy as np
import pandas as pd
import yaml

from fedrepro.claims.checks.learning_curves import comparable, faster, gain_by_group, less_sensitive, ordered, slight
from fedrepro.claims.data import ClaimData
from fedrepro.claims.ledger import evaluate_claims
from fedrepro.results.summaries import auc_fin_per_seed

ROUNDS = np.arange(0, 31)
# each run's own seed noise in the loss: far below every effect these tests compare, yet independent per (run, seed),
# so that the paired per-seed effects differ and their t-test decides (curves equal in every seed tie: a sign test,
# which 3 seeds cannot decide, inference.effect_test)
JITTER = 1e-4


def _curve(label: str, method: str, rate: float, *, panel: str = "p", seeds: int = 3, offsets=None,
           diverge: bool = False, jitter: float = JITTER, **settings) -> list[dict]:
    """Loss exp(-rate t / 30) + offsets[seed] + the run's own noise (jitter x a normal draw per seed, from a
    generator seeded by the run's id), accuracy 1 - loss / 2."""
    run_id = f"{panel}-{label}-{settings}"
    noise = jitter * np.random.default_rng(zlib.crc32(run_id.encode())).standard_normal(seeds)
    offsets = np.zeros(seeds) if offsets is None else np.asarray(offsets)
    rows = []
    for seed in range(seeds):
        loss = np.exp(-rate * ROUNDS / 30) + offsets[seed] + noise[seed]
        for r, v in zip(ROUNDS, loss):
            rows.append({"figure": "f", "panel": panel, "curve": label, "method": method,
                         "run_id": run_id, **settings, "seed": seed, "round": int(r),
                         "train_loss": float("nan") if diverge and r > 10 else float(v),
                         "test_accuracy": 1 - float(v) / 2, "diverged": diverge})
    return rows


LABELS = ["figure", "panel", "curve", "method", "run_id", "algorithm", "dataset", "M", "rho_cluster", "rho_device"]


def _table(*curves) -> pd.DataFrame:
    return pd.DataFrame([row for curve in curves for row in curve])


def _data(table: pd.DataFrame) -> ClaimData:
    return ClaimData(table, LABELS)


FC, AVG = {"method": "fedcluster"}, {"method": "fedavg"}


def test_auc_and_fin_follow_the_claim_rules():
    frame = auc_fin_per_seed(_table(_curve("FC", "fedcluster", 1.0, seeds=1, jitter=0)), LABELS, "train_loss")
    loss = np.exp(-ROUNDS / 30)
    assert frame["auc"].iloc[0] == np.mean(loss)
    assert frame["fin"].iloc[0] == np.mean(loss[-3:])  # last ceil(30 / 10) rounds
    wild = auc_fin_per_seed(_table(_curve("W", "fedavg", 1.0, seeds=1, diverge=True)), LABELS, "train_loss")
    assert np.isinf(wild["auc"].iloc[0]) and bool(wild["diverged"].iloc[0])


def test_faster_passes_fails_and_needs_a_seed_majority():
    table = _table(_curve("FC", "fedcluster", 3.0), _curve("FedAvg", "fedavg", 1.0))
    assert faster(_data(table), a=FC, b=AVG, per=["panel"], fin_rel_tol=0.01)[0] == "PASS"
    assert faster(_data(table), a=AVG, b=FC, per=["panel"])[0] == "FAIL"
    status, measured, *_ = faster(_data(table), a=FC, b=AVG, per=["panel"], min_gain=0.9)
    assert status == "FAIL" and "> 0 in 3/3" in measured  # wins, but not by 90%
    assert faster(_data(table), a=FC, b={"method": "absent"}, per=["panel"])[0] == "INCONCLUSIVE"
    # the mean wins but only 1 of 3 paired seeds does: not "faster" (docs/papers/fedcluster.md R21), and the
    # count of seeds alone does not make it fail: open
    noisy = _table(_curve("FC", "fedcluster", 1.0, offsets=(-0.3, 0.02, 0.02)), _curve("FedAvg", "fedavg", 1.0))
    assert float(faster(_data(noisy), a=FC, b=AVG, per=["panel"])[1].split("G ")[1].split()[0]) > 0
    result = faster(_data(noisy), a=FC, b=AVG, per=["panel"])
    assert result.status == "INCONCLUSIVE" and "(open: G > 0 in 1/3 seeds)" in result.measured
    # without the seed rule, the paired t-test of the per-seed gains does not decide either
    result = faster(_data(noisy), a=FC, b=AVG, per=["panel"], seed_share=0)
    assert result.status == "INCONCLUSIVE" and "(open: t(2) = " in result.measured


def test_faster_on_accuracy_and_against_a_diverged_run():
    table = _table(_curve("FC", "fedcluster", 3.0), _curve("FedAvg", "fedavg", 1.0))
    assert faster(_data(table), a=FC, b=AVG, per=["panel"], metric="test_accuracy", higher=True,
                  fin_abs_tol=0.005)[0] == "PASS"
    assert faster(_data(table), a=AVG, b=FC, per=["panel"], metric="test_accuracy", higher=True)[0] == "FAIL"
    # a diverged run's gain is known only by its sign: a sign test of the seeds, so 5 of them (1/2^5; 3 give 1/8)
    wild = _table(_curve("FC", "fedcluster", 1.0, seeds=5), _curve("FedAvg", "fedavg", 3.0, seeds=5, diverge=True))
    assert faster(_data(wild), a=AVG, b=FC, per=["panel"])[0] == "FAIL"
    assert faster(_data(wild), a=FC, b=AVG, per=["panel"], fin_rel_tol=0.01)[0] == "PASS"


def test_one_selector_compares_every_curve_it_matches():
    table = _table(_curve("M=5", "fedcluster", 1.02, M=5), _curve("M=10", "fedcluster", 2.0, M=10),
                   _curve("FedAvg", "fedavg", 1.0))
    status, measured, *_ = faster(_data(table), a={"method": "fedcluster"}, b=AVG, per=["panel"])
    assert status == "PASS" and measured.startswith("2/2") and "M=5" in measured
    assert faster(_data(table), a={"method": "fedcluster", "M": [10]}, b=AVG, per=["panel"], min_gain=0.1)[0] == "PASS"
    assert faster(_data(table), a={"method": "fedcluster"}, b=AVG, per=["panel"], min_gain=0.1)[0] == "FAIL"
    # M = 5 is within 5% of FedAvg and clearly below M = 10's gain
    assert comparable(_data(table), a={"curve": "M=5"}, b=AVG, per=["panel"], reference={"curve": "M=10"},
                      tol=0.05)[0] == "PASS"
    assert comparable(_data(table), a={"curve": "M=10"}, b=AVG, per=["panel"], tol=0.05)[0] == "FAIL"


def test_ordered_and_slight():
    def fig6(rates, jitter=JITTER):
        return _table(_curve("FedAvg", "fedavg", 1.0, rho_cluster=float("nan")),
                      *(_curve(f"rc={rc}", "fedcluster", r, rho_cluster=rc, jitter=jitter)
                        for rc, r in zip((0.1, 0.5, 0.9), rates)))
    kw = dict(select=FC, per=["panel"], along="rho_cluster", order=[0.9, 0.5, 0.1])
    assert ordered(_data(fig6((2.2, 2.1, 2.0))), **kw)[0] == "PASS"
    assert ordered(_data(fig6((2.0, 2.1, 2.2))), **kw)[0] == "FAIL"
    # equal curves, in every seed: their seeds tie at no difference, which settles no sign: not ordered either way
    result = ordered(_data(fig6((2.0, 2.0, 2.0), jitter=0)), **kw)
    assert result.status == "INCONCLUSIVE" and "open: 0.9->0.5 3 equal seeds, sign 0+/0-/3" in result.measured
    assert ordered(_data(fig6((2.2, 2.1, 2.0))), **{**kw, "order": [0.9, 0.7]})[0] == "INCONCLUSIVE"
    # "slightly": the spread over rho_cluster is small next to the gap to FedAvg
    assert slight(_data(fig6((2.2, 2.1, 2.0))), **kw, b=AVG)[0] == "PASS"
    assert slight(_data(fig6((5.0, 2.1, 1.1))), **kw, b=AVG)[0] == "FAIL"


def test_gain_by_group_and_less_sensitive():
    rows = []
    for dataset, (fc, avg) in {"cifar10": (3.0, 1.0), "mnist": (1.2, 1.0)}.items():
        for rho, slow in ((0.1, 1.0), (0.9, 0.5)):
            rows += _curve("FC", "fedcluster", fc, panel=dataset, dataset=dataset, rho_device=rho)
            rows += _curve("FedAvg", "fedavg", avg * slow, panel=dataset, dataset=dataset, rho_device=rho)
    table = pd.DataFrame(rows)
    kw = dict(a=FC, b=AVG, per=["dataset", "rho_device"], group="dataset")
    assert gain_by_group(_data(table), **kw, greater="cifar10", than="mnist")[0] == "PASS"
    assert gain_by_group(_data(table), **kw, greater="mnist", than="cifar10")[0] == "FAIL"
    assert gain_by_group(_data(table), **kw, greater="cifar10", than="svhn")[0] == "INCONCLUSIVE"
    # FedAvg slows down at rho 0.9, FedCluster does not
    kw = dict(per=["dataset"], along="rho_device", low=0.1, high=0.9)
    assert less_sensitive(_data(table), a=FC, b=AVG, **kw)[0] == "PASS"
    assert less_sensitive(_data(table), a=AVG, b=FC, **kw)[0] == "FAIL"


def test_the_fedcluster_ledger_runs_on_a_figure_table():
    claims = yaml.safe_load(open("config/claims/fedcluster.yaml"))
    claims["claims"] = [c for c in claims["claims"] if c["check"] != "rate_within"]  # needs the engine's counters
    table = _table(_curve("FedCluster", "fedcluster", 3.0, algorithm="fedcluster", dataset="cifar10",
                          rho_device=0.1), _curve("FedAvg", "fedavg", 1.0, algorithm="fedavg", dataset="cifar10",
                                                  rho_device=0.1))
    readings = yaml.safe_load(open("config/papers/fedcluster.yaml"))["readings"]
    ledger = evaluate_claims(claims, {"fig2": table}, "quick", {"fig2": LABELS}, readings).set_index("claim_id")
    assert ledger.loc["C1", "status"] == "PASS" and ledger.loc["C2", "status"] == "PASS"
    assert ledger.loc["C3", "status"] == "INCONCLUSIVE"  # fig3 not produced
    assert set(ledger["status"]) <= {"PASS", "FAIL", "INCONCLUSIVE"}


def _spread(rates, offsets, rotate: bool = False, **settings):
    """Fig. 6-like curves along rho_cluster whose seeds differ by `offsets` (the across-seed spread): the
    same seed effect in every curve (as common random numbers give), or with `rotate` a different one."""
    return _table(*(_curve(f"rc={rc}", "fedcluster", r, rho_cluster=rc,
                           offsets=tuple(np.roll(offsets, i)) if rotate else offsets, **settings)
                    for i, (rc, r) in enumerate(zip((0.9, 0.5, 0.1), rates))))


def test_ordered_leaves_steps_the_seeds_do_not_decide_open():
    kw = dict(select=FC, per=["panel"], along="rho_cluster", order=[0.9, 0.5, 0.1])
    rates = (2.0, 2.05, 2.1)  # each step lowers the mean AUC by ~0.007
    assert ordered(_data(_spread(rates, (0.0, 0.0, 0.0))), **kw).status == "PASS"  # no spread: ordered
    # seeds 0.05 apart, differently per curve: s.e. of a paired step ~0.05, above the 0.007 steps
    result = ordered(_data(_spread(rates, (-0.05, 0.0, 0.05), rotate=True)), **kw)
    assert result.status == "INCONCLUSIVE" and "open: 0.9->0.5 t(2) = " in result.measured
    # the same spread as a seed effect shared by every curve cancels in the paired differences: decided
    assert ordered(_data(_spread(rates, (-0.05, 0.0, 0.05))), **kw).status == "PASS"
    # a step against the order, larger than the spread, still decides: FAIL
    assert ordered(_data(_spread((2.0, 4.0, 0.5), (-0.01, 0.0, 0.01), rotate=True)), **kw).status == "FAIL"
    # a stated relative tolerance is a band around no difference: 5% of ~0.43 is wider than the 0.007 steps, 1% is not
    assert ordered(_data(_spread(rates, (0.0, 0.0, 0.0))), **kw, rel_tol=0.05).status == "INCONCLUSIVE"
    assert ordered(_data(_spread(rates, (0.0, 0.0, 0.0))), **kw, rel_tol=0.01).status == "PASS"


def test_slight_gain_by_group_and_less_sensitive_leave_differences_the_seeds_do_not_decide_open():
    noise = (0.0, 1.0, 2.0)  # a seed effect of up to 2 on losses of 0.05-1, rolled per curve

    def fig6(rates, offsets):  # FedAvg and three FedCluster curves, each with its own seed effect
        return _table(_curve("FedAvg", "fedavg", 1.0, rho_cluster=float("nan"), offsets=offsets),
                      *(_curve(f"rc={rc}", "fedcluster", r, rho_cluster=rc, offsets=tuple(np.roll(offsets, i + 1)))
                        for i, (rc, r) in enumerate(zip((0.1, 0.5, 0.9), rates))))
    kw = dict(select=FC, b=AVG, per=["panel"], along="rho_cluster", order=[0.9, 0.5, 0.1])
    assert slight(_data(fig6((2.2, 2.1, 2.0), (0.0, 0.0, 0.0))), **kw).status == "PASS"  # gap 0.2, spread 0.03
    result = slight(_data(fig6((2.2, 2.1, 2.0), noise)), **kw)
    assert result.status == "INCONCLUSIVE" and "(open: t(2) = " in result.measured

    def groups(offsets):  # FedCluster's gain larger on cifar10; FedAvg slows at rho_device 0.9
        rows = []
        for j, (dataset, (fc, avg)) in enumerate({"cifar10": (3.0, 1.0), "mnist": (1.2, 1.0)}.items()):
            for i, (rho, slow) in enumerate(((0.1, 1.0), (0.9, 0.5))):
                rows += _curve("FC", "fedcluster", fc, panel=dataset, dataset=dataset, rho_device=rho,
                               offsets=tuple(np.roll(offsets, i + j)))
                rows += _curve("FedAvg", "fedavg", avg * slow, panel=dataset, dataset=dataset, rho_device=rho,
                               offsets=tuple(np.roll(offsets, i + j + 1)))
        return pd.DataFrame(rows)
    by_group = dict(a=FC, b=AVG, per=["dataset", "rho_device"], group="dataset", greater="cifar10", than="mnist")
    assert gain_by_group(_data(groups((0.0, 0.0, 0.0))), **by_group).status == "PASS"
    result = gain_by_group(_data(groups(noise)), **by_group)
    assert result.status == "INCONCLUSIVE" and "(open: t(2) = " in result.measured
    sensitive = dict(a=FC, b=AVG, per=["dataset"], along="rho_device", low=0.1, high=0.9)
    assert less_sensitive(_data(groups((0.0, 0.0, 0.0))), **sensitive).status == "PASS"
    result = less_sensitive(_data(groups(noise)), **sensitive)
    assert result.status == "INCONCLUSIVE" and "(open: t(2) = " in result.measured


def test_ordered_reads_the_final_value_and_a_floor_of_a_metric_at_chance():
    kw = dict(select=FC, per=["panel"], along="rho_cluster", order=[0.9, 0.5, 0.1])
    # loss exp(-r t / 30) ends at exp(-r): the final values order as the AUCs here
    assert ordered(_data(_spread((1.0, 2.0, 3.0), (0.0, 0.0, 0.0))), **kw, value="final").status == "PASS"
    # accuracy 1 - loss / 2 ends at 0.98 / 0.93 / 0.82 (rates 3, 2, 1): every curve below a floor of 0.99
    accuracy = dict(kw, metric="test_accuracy", higher=True, value="final")
    assert ordered(_data(_spread((3.0, 2.0, 1.0), (0.0, 0.0, 0.0))), **accuracy).status == "FAIL"
    result = ordered(_data(_spread((3.0, 2.0, 1.0), (0.0, 0.0, 0.0))), **accuracy, floor=0.99)
    assert result.status == "INCONCLUSIVE" and "below the floor" in result.measured


def test_faster_leaves_a_cell_open_while_both_curves_sit_below_the_metric_floor():
    table = _table(_curve("M=10", "fedcluster", 3.0, M=10), _curve("FedAvg", "fedavg", 1.0))
    kw = dict(a=FC, b=AVG, per=["panel"], metric="test_accuracy", higher=True)
    assert faster(_data(table), **kw).status == "PASS"  # final accuracies 0.98 vs 0.82
    result = faster(_data(table), **kw, floor=0.99)  # both below the trivial level: nothing learned yet
    assert result.status == "INCONCLUSIVE" and "not learned yet" in result.measured
    assert faster(_data(table), **kw, floor=0.9).status == "PASS"  # one side above it: decided
