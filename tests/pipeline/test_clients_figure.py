"""Figure kind `clients` (DeFedAvg's trace facts: who trains for the server) and the checks that read run
facts: the figure table comes from run.json as engine `async` writes it, from real timing traces."""

import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fedrepro import asynchrony
from fedrepro.asynchrony import SystemModel, simulate
from fedrepro.claims.checks.run_facts import compare_fact, rank_correlation
from fedrepro.claims.data import ClaimData
from fedrepro.experiments.runtable import Curve, Figure
from fedrepro.plots.clients import clients
from fedrepro.experiments.store import METRICS_SHA256, run_files, write_metrics
from fedrepro.results.tables import figure_table
from fedrepro.utils.digest import file_sha256

SYSTEM = SystemModel(flops_per_iteration=1.7e7, fastest_flops=1e10, model_bytes=2.2e6, uplink_bps=4e8,
                     downlink_bps=4e8)
PROTOCOLS = {"FedAvg": "fedavg", "FedBuff": "fedbuff", "DeFedAvg-nIID": "defedavg_niid"}
N_CLIENTS, SEEDS = 20, (0, 1)


def _write_run(results, label: str, protocol: str):
    """run.json of a run as engine async writes it (the facts of Engine._facts), from a real trace."""
    run_id = f"run-{protocol}"
    files = run_files(results, run_id)
    files.run_dir.mkdir(parents=True)
    facts, traces = {}, {}
    for seed in SEEDS:
        tr = simulate(asynchrony.PROTOCOLS[protocol], SYSTEM, n_clients=N_CLIENTS, n_per_round=4, local_steps=10,
                      horizon_time=5.0, rng_parts=("clients-figure", seed))
        traces[seed] = tr
        facts[str(seed)] = {"diverged_at": None, "trace": tr.summary(), "iteration_time": tr.iteration_time.tolist(),
                            "participation": tr.participation().tolist(),
                            "trainings_started": tr.trainings_started.tolist()}
    write_metrics(files.metrics, [{"seed": s, "round": 0} for s in SEEDS], ["seed", "round"])
    spec = {"engine": "async", "algorithm": protocol, "n_clients": N_CLIENTS, "n": 4, "K": 10, "rounds": 99}
    files.record.write_text(json.dumps({"run_id": run_id, "spec": spec, "summary": {"seeds": facts},
                                        METRICS_SHA256: file_sha256(files.metrics)}))
    return Curve("FMNIST, non-IID, n = 4", label, protocol, run_id, {}), traces


def _figure(results):
    curves, traces = [], {}
    for label, protocol in PROTOCOLS.items():
        curve, traces[label] = _write_run(results, label, protocol)
        curves.append(curve)
    figure = Figure("defedavg", "participation", "Who trains", "", "smoke", [], {"kind": "clients"}, curves,
                    setting_keys=["K", "n", "n_clients", "rounds"])
    return figure, traces


@pytest.fixture(scope="module")
def figure_and_table(tmp_path_factory):
    results = tmp_path_factory.mktemp("clients") / "results"
    figure, traces = _figure(results)
    return figure, figure_table(figure, results), traces


def test_the_table_holds_each_clients_trace_facts(figure_and_table):
    figure, table, traces = figure_and_table
    assert table.columns[: len(figure.label_columns)].tolist() == figure.label_columns
    for label, by_seed in traces.items():
        for seed, tr in by_seed.items():
            rows = table[(table["curve"] == label) & (table["seed"] == seed)]
            assert rows["client"].tolist() == list(range(N_CLIENTS))
            np.testing.assert_array_equal(rows["participation"], tr.participation())
            np.testing.assert_allclose(rows["speed"], 1.0 / tr.iteration_time)
            assert rows["participation_share"].sum() == pytest.approx(1.0)
            summary = tr.summary()
            assert (rows["mean_round_time"] == summary["mean_round_time"]).all()
            assert (rows["rounds_closed"] == summary["rounds"]).all()
    assert (table["rounds"] == 99).all()  # the run setting keeps its name; the trace's count is rounds_closed


def test_fedbuff_relies_on_fast_clients_and_the_send_buffers_do_not(figure_and_table):
    """Claim 8's mechanism on real traces: first arrivals favour fast clients; DeFedAvg-nIID's send
    buffers hand the server whichever clients' updates are waiting, so speed decides little."""
    figure, table, _ = figure_and_table
    data = ClaimData(table, figure.label_columns)
    status, measured, _, margin, *_ = rank_correlation(data, select={"method": "fedbuff"}, per=["panel"],
                                                   columns=["speed", "participation"], above=0.5)
    assert status == "PASS" and margin > 0.3, measured
    status, measured, *_ = rank_correlation(data, select={"method": "fedbuff"}, per=["panel"],
                                            columns=["speed", "participation"], within=0.2)
    assert status == "FAIL", measured
    fedavg_rho = data.rank_correlations("speed", "participation").query("method == 'fedavg'")["rho"]
    assert fedavg_rho.abs().mean() < 0.5  # FedAvg samples uniformly: no strong association


def test_rank_correlation_on_known_inputs():
    base = {"figure": "f", "panel": "p", "curve": "c", "method": "m", "run_id": "r"}
    labels = ["figure", "panel", "curve", "method", "run_id"]

    def run(*seeds):
        return ClaimData(pd.DataFrame([{**base, "seed": s, "x": float(i), "y": float(y)}
                                       for s, ys in enumerate(seeds) for i, y in enumerate(ys)]), labels)

    check = dict(select={}, per=["panel"], columns=["x", "y"])
    rising = run([1, 2, 3, 5, 4], [1, 2, 3, 4, 5], [2, 1, 3, 4, 5])  # rho 0.9, 1, 0.9 by seed
    result = rank_correlation(rising, above=0.5, **check)
    assert result.status == "PASS" and result.p_pass < 0.05  # the one-sided t-test of the seeds' rho
    # seeds of their own (tied seeds are a sign test, which 3 seeds cannot decide: inference.effect_test)
    falling = run([5, 4, 3, 2, 1], [5, 4, 3, 1, 2], [4, 5, 3, 2, 1])  # rho -1, -0.9, -0.9
    assert rank_correlation(falling, above=0.5, **check).status == "FAIL"
    result = rank_correlation(run(*[[2, 2, 2, 2, 2]] * 3), above=0.5, **check)  # constant: undefined, open
    assert result.status == "INCONCLUSIVE" and "undefined" in result.measured
    unlinked = run([2, 5, 3, 1, 4], [1, 5, 3, 4, 2], [3, 4, 1, 5, 2])  # rho 0, 0.1, -0.1: mean 0
    result = rank_correlation(unlinked, within=0.2, **check)
    assert result.status == "PASS" and result.margin == pytest.approx(0.2)
    linked = run([1, 2, 3, 4, 5], [1, 3, 2, 4, 5], [2, 1, 3, 5, 4])  # rho 1, 0.9, 0.8
    assert rank_correlation(linked, within=0.2, **check).status == "FAIL"
    with pytest.raises(ValueError, match="needs `above` or `within`"):
        rank_correlation(run([1, 2]), **check)


def test_compare_fact_on_the_seed_mean_of_a_per_seed_value(figure_and_table):
    figure, table, traces = figure_and_table
    data = ClaimData(table, figure.label_columns)
    round_time = {label: np.mean([tr.summary()["mean_round_time"] for tr in by_seed.values()])
                  for label, by_seed in traces.items()}
    assert round_time["FedBuff"] < round_time["FedAvg"]  # the premise of claim 6 on these traces
    result = compare_fact(data, a={"method": "fedbuff"}, b={"method": "fedavg"}, per=["panel"],
                          column="mean_round_time")
    assert result.status == "PASS"
    assert result.margin == pytest.approx(math.log10(round_time["FedAvg"] / round_time["FedBuff"]))
    assert compare_fact(data, a={"method": "fedavg"}, b={"method": "fedbuff"}, per=["panel"],
                        column="mean_round_time").status == "FAIL"
    with pytest.raises(ValueError, match="'participation' varies within a seed"):
        compare_fact(data, a={"method": "fedbuff"}, b={"method": "fedavg"}, per=["panel"], column="participation")


def test_the_figure_draws_a_point_per_client_and_seed_with_rho_in_the_legend(figure_and_table):
    figure, table, _ = figure_and_table
    fig = clients(table, figure)
    ax = fig.axes[0]
    assert [len(c.get_offsets()) for c in ax.collections] == [N_CLIENTS * len(SEEDS)] * len(PROTOCOLS)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [t.split(" (")[0] for t in legend] == list(PROTOCOLS) and all("ρ = " in t for t in legend)
    plt.close(fig)


def test_a_run_without_trace_facts_is_an_error(tmp_path):
    files = run_files(tmp_path, "r")
    files.run_dir.mkdir(parents=True)
    write_metrics(files.metrics, [{"seed": 0, "round": 0}], ["seed", "round"])
    files.record.write_text(json.dumps({"run_id": "r", "spec": {}, "summary": {"seeds": {"0": {"diverged_at": None}}},
                                        METRICS_SHA256: file_sha256(files.metrics)}))
    figure = Figure("p", "f", "F", "", "smoke", [], {"kind": "clients"}, [Curve("P", "c", "m", "r", {})], setting_keys=[])
    with pytest.raises(ValueError, match="run r seed 0 has no trace facts in its run.json"):
        figure_table(figure, tmp_path)
