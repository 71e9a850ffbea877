"""Figure kind `gantt` (DeFedAvg Fig. 1): the figure table holds the runs' timelines and round closes,
read from run.json and metrics.csv as engine `async` writes them; the figure draws one lane per client."""

import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fedrepro import asynchrony
from fedrepro.asynchrony import TIMELINE_KINDS, SystemModel, simulate
from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import Curve, Figure
from fedrepro.plots import draw_figure
from fedrepro.plots.gantt import gantt
from fedrepro.experiments.store import METRICS_SHA256, run_files, write_metrics
from fedrepro.results.tables import figure_table, write_figure_table
from fedrepro.utils.digest import file_sha256
from fedrepro.schemas import check
from fedrepro.validate import check_timelines

# one local step takes 0.5 s on the fastest client; a transfer takes 0.5 s
SYSTEM = SystemModel(flops_per_iteration=1.0, fastest_flops=2.0, model_bytes=62_500.0, uplink_bps=1e6,
                     downlink_bps=1e6)
PROTOCOLS = {"FedAvg": "fedavg", "DeFedAvg-nIID": "defedavg_niid", "DeFedAvg-IID": "defedavg_iid"}
ROUNDS = 6


def _write_run(results, label: str, protocol: str, seeds=(0, 1), timeline: bool = True):
    """run.json + metrics.csv of a run as engine async writes them, from a real timing trace (N = 3, n = 2)."""
    run_id = f"run-{protocol}"
    files = run_files(results, run_id)
    files.run_dir.mkdir(parents=True)
    facts, rows, traces = {}, [], {}
    for seed in seeds:
        tr = simulate(asynchrony.PROTOCOLS[protocol], SYSTEM, n_clients=3, n_per_round=2, local_steps=4, rounds=ROUNDS,
                      rng_parts=("gantt", seed), slowdowns=np.array([1.0, 2.0, 3.0]), record_timeline=True)
        traces[seed] = tr
        tl = tr.timeline
        facts[str(seed)] = {"diverged_at": None}
        if timeline:
            facts[str(seed)]["timeline"] = {"client": tl.client.tolist(), "kind": tl.kind.tolist(),
                                            "start": tl.start.tolist(), "end": tl.end.tolist(),
                                            "training": tl.training.tolist()}
        rows += [{"seed": seed, "round": r, "sim_time": 0.0 if r == 0 else float(tr.close_time[r - 1]),
                  "test_accuracy": 0.1 * r} for r in range(ROUNDS + 1)]
    write_metrics(files.metrics, rows, ["seed", "round", "sim_time", "test_accuracy"])
    spec = {"engine": "async", "algorithm": protocol, "n_clients": 3, "n": 2, "K": 4, "rounds": ROUNDS,
            "record_timeline": timeline}
    files.record.write_text(json.dumps({"run_id": run_id, "spec": spec, "summary": {"seeds": facts},
                                        METRICS_SHA256: file_sha256(files.metrics)}))
    return Curve("protocols", label, label.lower(), run_id, {}), traces


def _figure(results, plot=None, **kw):
    curves, traces = [], {}
    for label, protocol in PROTOCOLS.items():
        curve, traces[label] = _write_run(results, label, protocol, **kw)
        curves.append(curve)
    figure = Figure("defedavg", "fig1", "Fig. 1: local training protocols", "", "smoke", [],
                    {"kind": "gantt", **(plot or {})}, curves, setting_keys=["K", "n", "n_clients"])
    return figure, traces


def test_the_figure_table_holds_every_interval_and_round_close(tmp_path):
    figure, traces = _figure(tmp_path / "results")
    table = figure_table(figure, tmp_path / "results")
    assert list(table.columns) == figure.label_columns + ["seed", "kind", "client", "training", "round", "start", "end"]
    for label, by_seed in traces.items():
        for seed, tr in by_seed.items():
            run = table[(table["curve"] == label) & (table["seed"] == seed)]
            spans, closes = run[run["kind"] != "round"], run[run["kind"] == "round"]
            tl = tr.timeline
            assert len(spans) == len(tl.client) > 3 * ROUNDS
            assert spans["kind"].tolist() == [TIMELINE_KINDS[k] for k in tl.kind]
            np.testing.assert_array_equal(spans[["client", "training"]].to_numpy(), np.c_[tl.client, tl.training])
            np.testing.assert_array_equal(spans[["start", "end"]].to_numpy(), np.c_[tl.start, tl.end])
            assert (spans["round"] == -1).all() and {"train", "upload"} <= set(spans["kind"])
            assert closes["round"].tolist() == list(range(1, ROUNDS + 1))
            np.testing.assert_array_equal(closes["start"], tr.close_time)
            assert (closes["client"] == -1).all() and (closes["end"] == closes["start"]).all()
    assert set(table.loc[table["curve"] == "FedAvg", "kind"]) == {"train", "upload", "download", "round"}
    assert set(table["K"]) == {4} and set(table["method"]) == {"fedavg", "defedavg-niid", "defedavg-iid"}
    # FedAvg is synchronous: no client trains across a round close
    fedavg = table[(table["curve"] == "FedAvg") & (table["seed"] == 0)]
    bounds = np.r_[0.0, fedavg.loc[fedavg["kind"] == "round", "start"]]
    for row in fedavg[fedavg["kind"] == "train"].itertuples():
        assert np.searchsorted(bounds, row.start, side="right") == np.searchsorted(bounds, row.end, side="left")


def test_the_figure_is_drawn_with_a_lane_per_client_and_the_round_closes(tmp_path):
    figure, traces = _figure(tmp_path / "results", {"until": 20.0, "seed": 1})
    source = tmp_path / "fig1.csv"
    write_figure_table(figure, tmp_path / "results", source)
    table = pd.read_csv(source)
    fig = gantt(table, figure, until=20.0, seed=1)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == list(PROTOCOLS)
    for ax, (label, by_seed) in zip(axes, traces.items()):
        tl = by_seed[1].timeline
        drawn = (tl.start < 20.0) & (tl.end > tl.start)
        assert len(ax.collections) == drawn.sum()  # a bar per interval begun before `until`
        assert len(ax.get_lines()) == (by_seed[1].close_time <= 20.0).sum()
        assert [t.get_text() for t in ax.get_yticklabels()] == ["client 0", "client 1", "client 2"]
        assert ax.get_xlim() == (0.0, 20.0)
    assert "seed 1 shown of 2" in fig._suptitle.get_text()
    plt.close(fig)
    pdf, png = tmp_path / "fig1.pdf", tmp_path / "fig1.png"
    draw_figure(figure, source, pdf, png)
    assert pdf.read_bytes()[:4] == b"%PDF" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_without_a_timeline_or_an_unknown_seed_is_an_error(tmp_path):
    figure, _ = _figure(tmp_path / "results", timeline=False)
    with pytest.raises(ValueError, match=re.escape("run run-fedavg seed 0 has no timeline in its run.json; a gantt "
                                                   "figure needs runs with record_timeline: true")):
        figure_table(figure, tmp_path / "results")
    figure, _ = _figure(tmp_path / "other", seeds=(0,))
    table = figure_table(figure, tmp_path / "other")
    with pytest.raises(ValueError, match="gantt seed 3 is not a seed of curve 'FedAvg'; its seeds: 0"):
        gantt(table, figure, seed=3)


def test_the_schema_checks_gantt_options():
    paper = {"key": "p", "title": "P", "engine": "async", "defaults": {"seeds": 1}, "panels": {"a": {}},
             "methods": {"m": {}}, "scales": {"smoke": {}, "quick": {}, "paper": {}},
             "figures": {"f1": {"title": "F", "panels": [{"name": "A", "use": "a"}], "curves": [{"method": "m"}],
                                "plot": {"kind": "gantt", "until": 30, "seed": 0, "ncols": 1}}}}
    check(paper, "paper.schema.yaml", "p.yaml")
    paper["figures"]["f1"]["plot"]["untill"] = 30
    with pytest.raises(ConfigError, match="'untill' was unexpected"):
        check(paper, "paper.schema.yaml", "p.yaml")


def test_a_gantt_figure_whose_runs_record_no_timeline_is_refused_at_start_up(tmp_path):
    figure, _ = _figure(tmp_path / "results")
    runs = {c.run_id: {"record_timeline": True} for c in figure.curves}
    check_timelines(figure, runs, "async")
    with pytest.raises(ConfigError, match="figures.fig1 is a gantt figure, which reads the timing trace of engine "
                                          "async; this paper's engine is federated_nn"):
        check_timelines(figure, runs, "federated_nn")
    runs[figure.curves[1].run_id] = {}
    with pytest.raises(ConfigError, match="figures.fig1 is a gantt figure, but its curves DeFedAvg-nIID do not set "
                                          "record_timeline: true"):
        check_timelines(figure, runs, "async")
