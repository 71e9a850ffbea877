"""The DeFedAvg configuration: the paper's settings per figure, the reduced scales' value maps (n/N and the
simulated cost of a local training kept), and targets that are analysis settings, not part of a run."""

from pathlib import Path

import yaml

from fedrepro.experiments.runtable import label_values, resolve_paper
from fedrepro.utils.patch import patched

CONFIG = Path(__file__).resolve().parents[2] / "config" / "papers" / "defedavg.yaml"


def _resolve(scale: str, edit=None):
    cfg = yaml.safe_load(CONFIG.read_text())
    if edit:
        edit(cfg)
    runs, figures = resolve_paper(cfg, scale)
    return runs, {name: fig for (_, name), fig in figures.items()}


def test_the_paper_scale_is_the_papers_settings():
    runs, figures = _resolve("paper")
    table = [runs[r] for r in figures["table1"].run_ids]
    assert len(table) == 64 and {r["n_clients"] for r in table} == {100} and {r["n"] for r in table} == {10, 20, 40, 80}
    assert set(figures["table1"].run_ids) == {r for f in ("fig2", "fig3", "fig4", "fig5") for r in figures[f].run_ids}
    assert {(r["algorithm"], r["K"]) for r in table} >= {("asysg", 1), ("fedavg", 50), ("defedavg_niid", 50)}
    cifar_iid_10 = {r["algorithm"]: (r["lr_global"], r["lr_local"]) for r in table
                    if (r["dataset"], r["partition"], r["n"]) == ("cifar10", "iid", 10)}
    assert cifar_iid_10 == {"fedavg": (1.0, 0.01), "favano": (1.0, 0.05), "asysg": (0.1, 1.0), "defedavg_iid": (1.0, 0.05)}
    assert {runs[r]["n"] for r in figures["fig6"].run_ids} == {5, 10, 20, 40, 80}
    assert {runs[r]["K"] for r in figures["fig7"].run_ids} == {20, 50, 100}


def test_table_i_draws_the_panels_of_figs_2_to_5_again_in_its_own_order():
    _, figures = _resolve("quick")
    panels = [c.panel for c in figures["table1"].curves][::4]  # 4 curves a panel
    assert panels[:5] == ["FMNIST, IID, n = 10", "FMNIST, IID, n = 20", "FMNIST, IID, n = 40", "FMNIST, IID, n = 80",
                          "FMNIST, non-IID, n = 10"]  # by data, partition, n: values ranked as they first appear
    assert sorted(figures["table1"].run_ids) == sorted(r for f in ("fig2", "fig3", "fig4", "fig5")
                                                       for r in figures[f].run_ids)
    assert figures["participation"].run_ids == figures["table1"].run_ids

    def from_fig2_only(cfg):  # a curve changed in the source changes the reusing figure's run too
        cfg["figures"]["fig2"]["panels"][0]["curves"][0]["lr_local"] = 0.5
        cfg["figures"]["table1"]["panels"] = {"from": ["fig2"]}
    _, paper = _resolve("paper")
    _, edited = _resolve("paper", from_fig2_only)
    assert edited["table1"].run_ids == edited["fig2"].run_ids
    assert len(set(edited["table1"].run_ids) - set(paper["fig2"].run_ids)) == 1


def test_the_quick_scale_keeps_n_over_N_and_the_cost_of_a_local_training():
    runs, figures = _resolve("quick")
    table = [runs[r] for r in figures["table1"].run_ids]
    assert {r["n_clients"] for r in table} == {20} and {r["n"] for r in table} == {2, 4, 8, 16}
    assert {r["K"] for r in table if r["algorithm"] != "asysg"} == {10} and {r["compute_time_scale"] for r in table} == {5.0}
    assert {runs[r]["K"] for r in figures["fig7"].run_ids} == {4, 10, 20}
    assert {runs[r]["n"] for r in figures["fig6"].run_ids} == {1, 2, 4, 8, 16}
    # the step sizes are the §4.1.4 protocol's at this scale (per_run: every Table I run's own entry, but AsySG's
    # on CIFAR-10 IID where both its rates diverged); under the alternative table_ii, Table II's by the paper's n
    # column (quick n = 2 of 20 takes n = 10's), as at the paper scale
    cfg = yaml.safe_load(CONFIG.read_text())
    tuned = {tuple(e["where"].values()): e["set"] for e in cfg["scales"]["quick"]["per_run"]}
    for r in table:
        key = (r["method"], r["dataset"], r["partition"], r["n"], r["n_clients"])
        assert key in tuned or (r["method"], r["dataset"], r["partition"]) == ("asysg", "cifar10", "iid")
        assert all(r[k] == v for k, v in tuned.get(key, {}).items())
    paper_runs, paper_figures = _resolve("paper")
    rates = lambda rs: sorted((r["dataset"], r["partition"], r["algorithm"], r["lr_global"], r["lr_local"]) for r in rs)  # noqa: E731
    assert rates(table) != rates(paper_runs[r] for r in paper_figures["table1"].run_ids)
    table_ii = cfg["readings"]["step_sizes"]["alternatives"]["table_ii"]["set"]
    alt_runs, alt_figures = _resolve("quick", lambda c: c.update(patched(c, table_ii)))
    assert rates(alt_runs[r] for r in alt_figures["table1"].run_ids) == rates(
        paper_runs[r] for r in paper_figures["table1"].run_ids)
    assert any(d.startswith("lr_local set per run") for d in figures["fig2"].deviations)
    assert any(d.startswith("n = ") and "2 where the paper has 10" in d for d in figures["fig2"].deviations)
    paper_n = {(runs[c.run_id]["n"], c.paper["n"]) for c in figures["table1"].curves}
    assert (2, 10) in paper_n and all(cfg["scales"]["quick"]["values"]["n"][p] == n for n, p in paper_n)
    assert "n_paper" in figures["table1"].label_columns


def test_a_target_is_an_analysis_setting_changing_it_retrains_nothing():
    runs, figures = _resolve("quick")
    assert not any("target_accuracy" in spec for spec in runs.values())
    assert {c.analysis["target_accuracy"] for c in figures["table1"].curves} == {0.73, 0.65, 0.37, 0.34}
    assert "target_accuracy" in figures["table1"].label_columns

    def lower(cfg):
        cfg["scales"]["quick"]["panels"]["fmnist_iid"]["target_accuracy"] = 0.5

    runs2, figures2 = _resolve("quick", lower)
    assert runs2.keys() == runs.keys()
    assert 0.5 in {c.analysis["target_accuracy"] for c in figures2["table1"].curves}


def test_claims_read_a_reduced_scale_in_the_papers_terms():
    """A claim names the paper's n (order [5, 10, 20, 40, 80]); at the quick scale the table holds 1, 2, 4, 8,
    16 of 20 clients beside their paper columns, which the claims read as n before any check runs."""
    import pandas as pd

    from fedrepro.results.tables import in_paper_terms

    runs, figures = _resolve("quick")
    fig6 = figures["fig6"]
    assert {"n_paper", "K_paper"} <= set(fig6.label_columns)
    rows = [fig6.curve_labels(c, runs[c.run_id]) for c in fig6.curves]
    table = pd.DataFrame(rows).assign(test_accuracy=0.1)
    back, labels = in_paper_terms(table, fig6.label_columns)
    assert sorted(set(back["n"])) == [5, 10, 20, 40, 80] and set(back["K"]) == {50}
    assert "n_paper" not in back and "n_paper" not in labels and "n" in labels
    assert list(back.columns) == [c for c in table.columns if not c.endswith("_paper")]  # n where it was
    assert sorted(set(table["n"])) == [1, 2, 4, 8, 16]  # the figure table itself is left as it is
    paper_runs, paper_figures = _resolve("paper")
    assert "n_paper" not in paper_figures["fig6"].label_columns  # no map at paper scale


def test_a_map_that_sends_two_of_the_papers_values_to_one_keeps_both():
    """At smoke scale samples_per_client maps 600 (FMNIST) and 500 (CIFAR-10) both to 20, which no inverse of the
    map could tell apart: the paper's value travels with each curve instead, so the claims may name both."""
    runs, figures = _resolve("smoke")
    pairs = {(runs[c.run_id]["dataset"], runs[c.run_id]["samples_per_client"], c.paper["samples_per_client"])
             for c in figures["fig2"].curves}
    assert pairs == {("fashion_mnist", 20, 600), ("cifar10", 20, 500)}
    assert label_values(*resolve_paper(yaml.safe_load(CONFIG.read_text()), "smoke"))["fig2"]["samples_per_client"] \
        >= {600, 500}
