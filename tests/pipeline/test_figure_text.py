"""Figures say what they show: titles and panels give the values a reduced scale ran beside the paper's, stand-in
data is stamped in the title and both files' metadata, math is mathtext, rounds are whole, and the step size is
in the legend even when a figure has one."""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from fedrepro.plots.common import log_y, mathtext, panel_name, save_figure
from fedrepro.plots.convergence import convergence
from fedrepro.plots.loss_accuracy import loss_accuracy
from fedrepro.validate import load_and_validate

CONFIG = Path(__file__).resolve().parents[2] / "config"


@pytest.fixture(scope="module")
def tables():
    return {scale: load_and_validate({"scale": scale}, CONFIG)[1] for scale in ("quick", "paper")}


def test_a_title_gives_the_value_run_and_the_papers_where_the_scale_changed_it(tables):
    assert tables["paper"].figure("defedavg", "fig3").title == "Fig. 3: as Fig. 2 with n = 20"
    assert tables["quick"].figure("defedavg", "fig3").title == "Fig. 3: as Fig. 2 with n = 4 (paper 20)"
    # N changed by the scale's defaults, K by its value map, over every run drawn
    fig7 = tables["quick"].figure("defedavg", "fig7").title
    assert "K = 4, 10, 20 (paper 20, 50, 100)" in fig7 and "N = 20 (paper 100)" in fig7
    # a value the scale keeps is written once
    assert "N = 3, n = 2)" in tables["quick"].figure("defedavg", "fig1").title


def test_a_panel_named_in_the_papers_terms_gives_the_scales_value(tables):
    figure = tables["quick"].figure("defedavg", "fig2")
    assert panel_name(figure, "FMNIST, IID, n = 10") == "FMNIST, IID, n = 2 (paper 10)"
    assert panel_name(figure, "n = 100") == "n = 100"  # not the 10 of 100
    assert panel_name(tables["paper"].figure("defedavg", "fig2"), "FMNIST, IID, n = 10") == "FMNIST, IID, n = 10"


def test_math_is_mathtext():
    assert mathtext("||grad f(x^r)||") == r"$\Vert\nabla f(x^r)\Vert$"
    assert mathtext("f(θ_k) − f*") == r"$f(\theta_k) - f^\star$"
    assert mathtext("FedCluster, ρ_cluster = 0.5") == r"FedCluster, $\rho_{\mathrm{cluster}}$ = 0.5"
    assert mathtext("plain text, no math") == "plain text, no math"


def _rounds(curves: dict[str, float], rounds: int = 4) -> pd.DataFrame:
    """One panel, one row per (curve, seed, round); `curves` maps a label to its step size."""
    return pd.DataFrame([{"panel": "A", "curve": label, "method": label.lower(), "run_id": label, "seed": s,
                          "round": r, "grad_norm": 10.0 ** -(0.2 * r) * (1 + s), "train_loss": 1.0 / (1 + r),
                          "eta_tilde": eta, "diverged": False}
                         for label, eta in curves.items() for s in range(2) for r in range(rounds)])


def test_one_step_size_per_curve_is_still_in_the_legend_and_rounds_are_whole(tables):
    figure = tables["quick"].figure("fedpage", "fig2a")
    fig = convergence(_rounds({"FedPAGE": 0.1, "FedAvg": 0.05}), figure, y="grad_norm", style="eta_tilde",
                      style_name="step size")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["FedPAGE, step size = 0.1", "FedAvg, step size = 0.05"]
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in ax.get_xticks())  # 4 rounds: no 0.5, 1.5
    plt.close(fig)

    figure = tables["quick"].figure("tdcd", "fig6")
    fig = loss_accuracy(_rounds({"Q = 1": 0.5, "Q = 10": 0.05}).rename(columns={"eta_tilde": "lr"}), figure,
                        metrics=["train_loss"], step_size={"lr": "lr"})
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["Q = 1, lr = 0.5", "Q = 10, lr = 0.05"]
    plt.close(fig)


def test_a_log_axis_over_a_decade_and_a_half_labels_its_minor_ticks():
    """matplotlib's default labels only 0.01 and 0.1 here (its minor labels stop above one decade)."""
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [0.01, 0.05, 0.3])
    log_y(ax)
    fig.canvas.draw()
    labelled = [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
    assert {"0.02", "0.05", "0.2"} <= set(labelled) or {"0.02", "0.03", "0.2"} <= set(labelled), labelled
    plt.close(fig)


def test_stand_in_data_is_stamped_in_the_title_and_both_files(tables, tmp_path):
    figure = tables["quick"].figure("tdcd", "fig4")
    assert figure.stand_ins == ["synthetic-IHM stand-in (MIMIC-III not provided)"]  # no MIMIC-III in data/raw here
    table = _rounds({"Q = 1": 0.5}).rename(columns={"train_loss": "test_f1"})
    fig = loss_accuracy(table, figure, metrics=["test_f1"])
    assert "STAND-IN DATA" in fig._suptitle.get_text()
    save_figure(fig, figure, tmp_path / "f.pdf", tmp_path / "f.png")
    assert "STAND-IN DATA" in Image.open(tmp_path / "f.png").text["Title"]
    assert b"STAND-IN DATA" in (tmp_path / "f.pdf").read_bytes()  # the PDF's /Title (uncompressed metadata)
    real = tables["quick"].figure("tdcd", "fig6")
    assert real.stand_ins == [] and np.all([not c.startswith("STAND") for c in real.title.split()])
