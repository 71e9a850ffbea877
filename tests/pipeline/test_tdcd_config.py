"""The TDCD configuration: one run per (dataset, K, Q) shared by the time and iteration figures, the
settings of docs/papers/tdcd.md at the paper and quick scales, and data the user provides or its stand-in named
in the runs and captions."""

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from fedrepro.data.inputs import prepared_path
from fedrepro.experiments.runtable import RunTable, resolve_paper
from fedrepro.results.tables import common_x

CONFIG = Path(__file__).resolve().parents[2] / "config" / "papers" / "tdcd.yaml"
PAIRS = {"fig3": "fig6", "fig4": "fig7", "fig5": "fig8"}  # time figure -> iteration figure of the same runs


def _resolve(scale: str, raw_root: Path):
    runs, figures = resolve_paper(yaml.safe_load(CONFIG.read_text()), scale, raw_root)
    return runs, {name: fig for (_, name), fig in figures.items()}


def _by_dataset(runs, figure):
    return [runs[r] for r in figure.run_ids]


def test_time_and_iteration_figures_share_their_runs(tmp_path):
    for scale in ("smoke", "quick", "paper"):
        runs, figures = _resolve(scale, tmp_path)
        assert len(runs) == 26  # 3 datasets x 2 K x 4 Q + Fig. 9's N = 1 and 16 (docs/papers/tdcd.md R4)
        for time_fig, iter_fig in PAIRS.items():
            assert figures[time_fig].run_ids == figures[iter_fig].run_ids and len(figures[time_fig].run_ids) == 8
            # each run twice in the time figure: its t_comm = 10 and 100 panels read different time columns
            sources = {(c.run_id, c.analysis["x_source"]) for c in figures[time_fig].curves}
            assert len(sources) == 16 and {s for _, s in sources} == {"time_tc10", "time_tc100"}
        n4 = [r for r in figures["fig9"].run_ids if runs[r]["N"] == 4]
        assert len(n4) == 1 and n4[0] in figures["fig7"].run_ids
        assert {runs[r]["N"] for r in figures["fig9"].run_ids} == {1, 4, 16}
        assert all("x_source" not in spec and "target_accuracy" not in spec for spec in runs.values())


def test_the_paper_scale_is_the_papers_settings(tmp_path):
    runs, figures = _resolve("paper", tmp_path)
    expected = {"fig6": ("cifar10", "resnet18_cifar", 2000, {50, 100}, 35000),
                "fig7": ("synthetic_ihm", "lstm", 2000, {20, 50}, 24000),
                "fig8": ("synthetic_12view", "resnet18_imagenet", 320, {10, 20}, 8000)}
    for name, (dataset, model, B, Ks, T) in expected.items():
        specs = _by_dataset(runs, figures[name])
        assert {(s["dataset"], s["model"], s["B"], s["iterations"], s["eval_every"]) for s in specs} == {
            (dataset, model, B, T, 20)}
        assert {s["K"] for s in specs} == Ks and {s["Q"] for s in specs} == {1, 10, 20, 30}
        assert all(s["train_subset"] is None and s["test_subset"] is None for s in specs)
    lrs = lambda name: {(s["Q"], s["N"], s["lr"]) for s in _by_dataset(runs, figures[name])}  # noqa: E731
    assert {lr for _, _, lr in lrs("fig6")} == {1e-4} and {lr for _, _, lr in lrs("fig8")} == {5e-4}
    assert lrs("fig7") == {(1, 4, 0.1), (10, 4, 0.01), (20, 4, 0.01), (30, 4, 0.01)}
    assert (10, 16, 0.1) in lrs("fig9")
    assert {runs[r]["view"] for r in figures["fig6"].run_ids} == {"tdcd"}


def test_the_quick_scale_is_the_reduced_profile(tmp_path):
    runs, figures = _resolve("quick", tmp_path)
    expected = {"fig6": (5000, 1000, 200, {5, 10}, 600), "fig7": (3000, 1000, 200, {2, 5}, 600),
                "fig8": (2000, 500, 64, {2, 4}, 450)}
    for name, (M, M_test, B, Ks, T) in expected.items():
        specs = _by_dataset(runs, figures[name])
        assert {(s["train_subset"], s["test_subset"], s["B"], s["iterations"]) for s in specs} == {(M, M_test, B, T)}
        assert {s["K"] for s in specs} == Ks
        assert {(s["eval_every"], s["eval_dense_every"], s["eval_dense_until"], s["train_eval_subsample"])
                for s in specs} == {(10, 2, 40, 1000)}
    # the paper's protocol: a rate per (dataset, N, K, Q), chosen by `fedrepro variants tdcd_quick` and frozen as
    # exactly one per_run entry for every run
    entries = yaml.safe_load(CONFIG.read_text())["scales"]["quick"]["per_run"]
    for spec in runs.values():
        match = [e for e in entries if all(spec[k] == v for k, v in e["where"].items())]
        assert len(match) == 1 and spec["lr"] == match[0]["set"]["lr"], spec
    cifar = _by_dataset(runs, figures["fig6"])[0]
    assert (cifar["view"], cifar["model"], cifar["split_axis"]) == ("tdcd_pool2", "cnn_s2", -1)
    mimic = _by_dataset(runs, figures["fig9"])
    assert {s["time_pool"] for s in mimic} == {4}
    modelnet = _by_dataset(runs, figures["fig8"])[0]
    assert (modelnet["image_channels"], modelnet["image_side"], modelnet["split_axis"], modelnet["squeeze_split"]) == (
        1, 16, 1, True)


def test_stand_ins_are_named_in_runs_and_captions_and_user_data_replaces_them(tmp_path):
    runs, figures = _resolve("quick", tmp_path)
    mimic = _by_dataset(runs, figures["fig7"])
    assert {s["dataset"] for s in mimic} == {"synthetic_ihm"}
    assert {s["data_source"] for s in mimic} == {"synthetic-IHM stand-in (MIMIC-III not provided)"}
    assert "synthetic-IHM stand-in" in figures["fig4"].caption and "stand-in" not in figures["fig3"].caption
    assert "synthetic 12-view stand-in" in figures["fig8"].caption
    modelnet = _by_dataset(runs, figures["fig8"])[0]
    table = RunTable("quick", runs, {})
    assert table.input_files(figures["fig8"].run_ids[0])["prepared"] == "data/prepared/synthetic_12view_gray16"
    assert prepared_path(modelnet) == "data/prepared/synthetic_12view_gray16"
    assert table.input_files(figures["fig6"].run_ids[0])["prepared"] == "data/prepared/cifar10-tdcd_pool2.npz"

    (tmp_path / "mimic3_ihm").mkdir()
    (tmp_path / "mimic3_ihm" / "ihm.npz").write_bytes(b"")  # presence is what decides (checked when prepared)
    real_runs, real_figures = _resolve("quick", tmp_path)
    real = _by_dataset(real_runs, real_figures["fig7"])
    assert {s["dataset"] for s in real} == {"mimic3_ihm"} and "stand-in" not in real_figures["fig4"].caption
    assert {s["data_source"] for s in real} == {"MIMIC-III in-hospital mortality (user-provided)"}
    assert set(real_figures["fig7"].run_ids).isdisjoint(figures["fig7"].run_ids)  # other data, other runs
    assert real_figures["fig6"].run_ids == figures["fig6"].run_ids


def test_a_time_panel_ends_where_its_shortest_curve_does():
    rows = [{"panel": p, "run_id": r, "time": t} for p, runs in (("a", {"q1": 400, "q30": 100}), ("b", {"q1": 50}))
            for r, end in runs.items() for t in np.linspace(0, end, 5)]
    cut = common_x(pd.DataFrame(rows), "time")
    assert cut[cut.panel == "a"].time.max() == 100 and cut[cut.panel == "b"].time.max() == 50
    assert len(cut[(cut.panel == "a") & (cut.run_id == "q30")]) == 5


def test_real_data_has_its_own_stated_rates_and_every_caption_lists_the_rates_that_ran(tmp_path):
    runs, figures = _resolve("quick", tmp_path)  # the stand-ins, tuned apart
    assert "lr as run: Q = 1 0.5; Q = 10 0.05; Q = 20 0.05; Q = 30 0.05." in figures["fig4"].caption
    assert "0.01 otherwise" not in figures["fig4"].caption
    (tmp_path / "mimic3_ihm").mkdir()  # the user's data: present is what decides (checked when prepared)
    (tmp_path / "mimic3_ihm" / "ihm.npz").write_bytes(b"")
    (tmp_path / "modelnet40_12view" / "classes").mkdir(parents=True)
    real_runs, real_figures = _resolve("quick", tmp_path)
    mimic = {(s["N"], s["Q"]): s["lr"] for s in (real_runs[r] for r in real_figures["fig7"].run_ids + real_figures["fig9"].run_ids)}
    assert {s["dataset"] for s in (real_runs[r] for r in real_figures["fig7"].run_ids)} == {"mimic3_ihm"}
    # the authors' scripts' rates (0.1 for Q = 1 and N = 16, else 0.01) x 5, the quick grid's factor for MIMIC
    assert mimic == {(4, 1): 0.5, (4, 10): 0.05, (4, 20): 0.05, (4, 30): 0.05, (1, 10): 0.05, (16, 10): 0.5}
    assert "lr as run: Q = 1 0.5; Q = 10 0.05" in real_figures["fig4"].caption
    assert "lr as run: N = 1 0.05; N = 4 0.05; N = 16 0.5." in real_figures["fig9"].caption
    modelnet = [real_runs[r] for r in real_figures["fig8"].run_ids]
    assert {s["dataset"] for s in modelnet} == {"modelnet40_12view"} and {s["lr"] for s in modelnet} == {0.005}
    paper_runs, paper_figures = _resolve("paper", tmp_path)  # the scripts' own rates
    assert "lr as run: Q = 1 0.1; Q = 10 0.01; Q = 20 0.01; Q = 30 0.01." in paper_figures["fig4"].caption
