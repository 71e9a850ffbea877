"""FedCluster configuration (paper scale = the paper, run sharing), input views and the figure kind."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedrepro.data.views import make_view, view_images
from fedrepro.algorithms import method
from fedrepro.algorithms.fedcluster import CentralizedSGD
from fedrepro.validate import load_and_validate
from fedrepro.plots.loss_accuracy import loss_accuracy

CONFIG = Path(__file__).resolve().parents[2] / "config"


@pytest.fixture(scope="module")
def tables():
    return {scale: load_and_validate({"scale": scale}, CONFIG)[1] for scale in ("smoke", "quick", "paper")}


def _runs(table, figure: str) -> list[dict]:
    return [table.runs[c.run_id] for c in table.figure("fedcluster", figure).curves]


def test_the_paper_scale_is_the_papers_setup(tables):
    runs = [r for r in tables["paper"].runs.values() if r["paper"] == "fedcluster"]
    assert len(runs) == 60  # 30 a dataset: centralized SGD once, not per rho (docs/papers/fedcluster.md R15)
    for run in runs:
        devices = (run["n_devices"], run["samples_per_device"], run["E"], run["B"], run["frac"])
        assert devices == (1000, 500, 20, 30, 0.1)
        assert run["model"] == "alexnet" and run["view"] == "crop28"
    lrs = {(r["dataset"], r["algorithm"], r.get("M"), r["local_opt"]): method("federated_nn", r["algorithm"]).rate(r) for r in runs}
    assert lrs[("cifar10", "fedavg", None, "sgd")] == 0.1 and lrs[("mnist", "fedavg", None, "sgd")] == 0.05
    assert lrs[("cifar10", "fedcluster", 10, "sgd")] == pytest.approx(0.01)
    assert lrs[("mnist", "fedcluster", 10, "sgd")] == pytest.approx(0.005)
    assert lrs[("cifar10", "fedcluster", 20, "sgd")] == pytest.approx(0.005)
    assert lrs[("cifar10", "csgd", None, "sgd")] == 0.01 and lrs[("mnist", "csgd", None, "sgd")] == 0.005
    csgd = next(r for r in runs if r["algorithm"] == "csgd")
    assert (CentralizedSGD.steps_per_round(csgd), csgd["csgd_batch"]) == (1000, 60)  # 60k samples a round


def test_figures_share_runs_where_the_paper_does(tables):
    for scale in ("quick", "paper"):
        table = tables[scale]
        fig2 = {(r["method"], r["rho_device"]): r for r in _runs(table, "fig2")}
        fig5 = {(r["method"], r.get("M"), r["rho_device"], r["dataset"]) for r in _runs(table, "fig5")}
        fig5_ids = {c.run_id for c in table.figure("fedcluster", "fig5").curves}
        fig6_ids = {c.run_id for c in table.figure("fedcluster", "fig6").curves}
        fig2_ids = {c.run_id for c in table.figure("fedcluster", "fig2").curves}
        assert len(fig5_ids & fig2_ids) == 2  # FedAvg and FedCluster M = 10 at rho_device = 0.1 (paper §IV-D)
        assert len(fig5_ids & fig6_ids) == 2  # FedAvg at rho_device = 0.5, both datasets (paper §IV-E)
        assert ("fedcluster", 20, 0.5, "mnist") in fig5 and ("fedcluster", 0.9) in fig2
    quick = [r for r in tables["quick"].runs.values() if r["paper"] == "fedcluster"]
    assert len(quick) == 60 and {r["model"] for r in quick} == {"cnn_tiny"}
    # issue 12: the paper's devices, 10% of a cluster a cycle (10 devices at M = 10), the 1.2 local passes
    assert {(r["n_devices"], r["samples_per_device"], r["E"], r["B"], r["frac"]) for r in quick} == {(1000, 100, 12, 10, 0.1)}


def test_centralized_sgd_is_one_run_per_dataset_drawn_in_every_row(tables):
    for scale in ("quick", "paper"):
        for name in ("fig2", "fig3"):
            figure = tables[scale].figure("fedcluster", name)
            csgd = [c for c in figure.curves if c.method == "csgd"]
            assert len(csgd) == 2 and len({c.run_id for c in csgd}) == 1 and len({c.panel for c in csgd}) == 2
            assert tables[scale].runs[csgd[0].run_id]["rho_device"] == 0.1
            others = [c for c in figure.curves if c.method != "csgd"]
            assert len(others) == 8 and len({c.run_id for c in others}) == 8  # the grid still varies the rest


def test_views_crop_pool_and_standardise():
    x = np.arange(2 * 32 * 32 * 3, dtype=np.uint8).reshape(2, 32, 32, 3)
    view = view_images(x, "crop28_pool2")
    assert view.shape == (2, 3, 14, 14) and view.dtype == np.float32
    assert view[0, 1, 0, 0] == x[0, 2:4, 2:4, 1].astype(np.float32).mean()  # centre crop 32 -> 28, then 2x2 mean
    assert view_images(x[..., 0], "crop28").shape == (2, 1, 28, 28)
    pooled = view_images(x, "pool2")  # no crop: 32 -> 16
    assert pooled.shape == (2, 3, 16, 16) and pooled[1, 2, 0, 0] == x[1, 0:2, 0:2, 2].astype(np.float32).mean()
    assert view_images(x[..., 0][:, :28, :28], "pool2").shape == (2, 1, 14, 14)
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (50, 28, 28), dtype=np.uint8), "y_train": np.arange(50) % 10,
              "x_test": rng.integers(0, 256, (10, 28, 28), dtype=np.uint8), "y_test": np.arange(10)}
    made = make_view(arrays, "crop28")
    assert made["x_train"].shape == (50, 1, 28, 28)
    assert abs(made["x_train"].mean()) < 1e-5 and abs(made["x_train"].std() - 1) < 1e-4


def _fig2_rows() -> pd.DataFrame:
    """Two panels of FedCluster and centralized SGD at rho_device = 0.1 and 0.4 (the loss grows with rho)."""
    return pd.DataFrame([
        {"panel": p, "curve": c, "method": m, "run_id": f"{p}{c}{rho}", "rho_device": rho, "seed": s, "round": r,
         "train_loss": 2.3 - 0.1 * r + rho, "test_accuracy": 0.1 + 0.1 * r, "diverged": False}
        for p in ("top", "bottom") for c, m in (("FedCluster", "fedcluster"), ("centralized SGD", "csgd"))
        for rho in (0.1, 0.4) for s in range(2) for r in range(4)])


def test_the_loss_accuracy_kind_lays_panels_out_as_the_paper(tables):
    figure = tables["smoke"].figure("fedcluster", "fig2")
    fig = loss_accuracy(_fig2_rows(), figure, metrics=["train_loss", "test_accuracy"], ncols=1,
                        style="rho_device", dashed=["csgd"])
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 4  # 2 rows (panels) x [train loss, test accuracy]
    assert [ax.get_title() for ax in axes[:2]] == ["top: train loss", "top: test accuracy"]
    lines = axes[0].get_lines()
    assert len(lines) == 4 and {ln.get_linestyle() for ln in lines} == {"-", "--"}


def test_a_curve_independent_of_the_style_is_drawn_once_and_the_legend_covers_no_axes(tables):
    figure = tables["smoke"].figure("fedcluster", "fig2")
    fig = loss_accuracy(_fig2_rows(), figure, metrics=["train_loss", "test_accuracy"], ncols=1, style="rho_device",
                        dashed=["csgd"], style_independent=["csgd"], legend="outside", log_metrics=["train_loss"])
    loss, accuracy = [ax for ax in fig.axes if ax.get_visible()][:2]  # the top panel
    assert loss.get_legend() is None
    labels = [t.get_text() for t in accuracy.get_legend().get_texts()]
    assert labels == ["FedCluster, ρ_device = 0.1", "FedCluster, ρ_device = 0.4", "centralized SGD"]
    csgd = [line for line in loss.get_lines() if line.get_label() == "centralized SGD"]
    assert len(loss.get_lines()) == 3 and len(csgd) == 1
    np.testing.assert_allclose(csgd[0].get_ydata(), 2.3 - 0.1 * np.arange(4) + 0.1)  # at the first rho_device
    assert (loss.get_yscale(), accuracy.get_yscale()) == ("log", "linear")
    fig.canvas.draw()
    legend_box, axes_box = accuracy.get_legend().get_window_extent(), accuracy.get_window_extent()
    assert legend_box.x0 >= axes_box.x1  # right of the panel's last axes, over no curve


def test_an_outside_legend_beside_another_panel_is_refused(tables):
    figure = tables["smoke"].figure("fedcluster", "fig4")
    with pytest.raises(ValueError, match="legend = 'outside' with ncols = 2"):
        loss_accuracy(_fig2_rows(), figure, ncols=2, legend="outside")


def test_the_ledger_says_how_the_scale_departs_from_the_paper(tables):
    note = tables["quick"].scale_note("fedcluster")
    assert note.startswith("Deviations from the paper at the quick scale: ")
    assert "model = cnn_tiny (paper scale: alexnet)" in note and "the paper's 1,000 devices" in note
    assert "keeps panels" not in note  # a figure's own deviations stay in its caption
    assert tables["paper"].scale_note("fedcluster") == ""
