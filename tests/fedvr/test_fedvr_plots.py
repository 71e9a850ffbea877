"""Figs 3-9 of fedvr: the arrays read back from a figure table, and what the plot kinds draw from them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Circle

from fedrepro.results.cep import cep_radius
from fedrepro.experiments.runtable import LABEL_COLUMNS, Figure
from fedrepro.plots import KINDS, draw_figure
from fedrepro.results.monte_carlo import curves_of

R, K = 5, 8
STAR = np.array([0.3, -0.2, 0.1])


def curve(method: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    cost = 0.01 + np.exp(-0.5 * np.arange(K + 1)) * (1 + rng.random((R, K + 1)))
    return {"panel": "case 1", "curve": method.upper(), "method": method, "cost": cost,
            "theta_final": STAR + 0.01 * rng.standard_normal((R, 3)), "theta_star": STAR, "f_star": 0.01}


@pytest.fixture
def curves():
    return [curve("ours", 0), curve("theirs", 1)]


@pytest.fixture
def table(mc_table, curves):
    # shuffled rows: the readers must not rely on the order the engine writes
    return mc_table(*curves).sample(frac=1.0, random_state=0).reset_index(drop=True)


def figure(kind: str, **options) -> Figure:
    return Figure("fedvr", "figX", "Fig. X", "", "smoke", [], {"kind": kind, **options})


def test_runs_read_back_from_the_table(table, curves):
    got = list(curves_of(table, LABEL_COLUMNS))
    assert sorted(labels["method"] for labels, _ in got) == ["ours", "theirs"]
    for labels, mc in got:
        want = curves[0] if labels["method"] == "ours" else curves[1]
        np.testing.assert_array_equal(mc.x, np.arange(K + 1))
        np.testing.assert_allclose(mc.cost, want["cost"], rtol=0, atol=0)
        np.testing.assert_allclose(mc.theta_final, want["theta_final"], rtol=0, atol=0)
        np.testing.assert_allclose(mc.theta_star, STAR, rtol=0, atol=0)
        assert mc.f_star == pytest.approx(0.01, abs=1e-15)
        lines = mc.curves()
        np.testing.assert_allclose(lines["var"], want["cost"].var(axis=0), rtol=1e-12)
        np.testing.assert_allclose(lines["sqdev"].mean(axis=0), lines["var"], rtol=1e-12)
        np.testing.assert_allclose(lines["mean_err"], want["cost"].mean(axis=0) - 0.01, rtol=1e-12)
        assert mc.cep((0, 1))["cep_2d"] == pytest.approx(cep_radius(want["theta_final"][:, :2]))


def _thick(ax) -> np.ndarray:
    """y data of the widest line of an axes (the thick mean)."""
    return max(ax.get_lines(), key=lambda line: line.get_linewidth()).get_ydata()


def test_variance_plot_draws_the_variance_from_round_one_side_by_side(table):
    fig = KINDS["mc_variance"](table, figure("mc_variance"), ylim=[1e-14, 1.0], overlay="variance")
    axes = fig.axes
    assert len(axes) == 3  # one per curve + the overlay
    mcs = {labels["method"]: mc for labels, mc in curves_of(table, LABEL_COLUMNS)}
    first = next(m for m in mcs if m.upper() in axes[0].get_title())
    np.testing.assert_allclose(_thick(axes[0]), mcs[first].curves()["var"][1:], rtol=1e-12)
    assert len(axes[0].get_lines()) == R + 1 and axes[0].get_yscale() == "log"
    assert axes[0].get_ylim() == pytest.approx((1e-14, 1.0))
    assert len(axes[2].get_lines()) == 2


def test_error_plot_with_variance_overlay(table):
    fig = KINDS["mc_error"](table, figure("mc_error"), ylim=[1e-6, 1.0], overlay="variance")
    mcs = {labels["method"]: mc for labels, mc in curves_of(table, LABEL_COLUMNS)}
    first = next(m for m in mcs if m.upper() in fig.axes[0].get_title())
    np.testing.assert_allclose(_thick(fig.axes[0]), mcs[first].curves()["mean_err"], rtol=1e-12)
    overlay = fig.axes[-1].get_lines()
    assert len(overlay) == 2 and len(overlay[0].get_ydata()) == K  # variance from k = 1


def test_ncols_wraps_a_panels_axes_into_rows(table):
    # Fig. 9: its curves and the overlay side by side were 2505 px wide at 150 dpi; 2 a row keeps text readable
    fig = KINDS["mc_error"](table, figure("mc_error"), ylim=[1e-6, 1.0], overlay="variance", ncols=2)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(fig.axes) == 4 and len(visible) == 3  # 2 curves + overlay in a 2 x 2 grid, the 4th left empty
    assert fig.get_size_inches() == pytest.approx((8.4, 7.0))
    overlay = visible[-1]
    assert overlay.get_subplotspec().rowspan.start == 1 and len(overlay.get_lines()) == 2
    assert overlay.get_legend() is not None and visible[0].get_shared_y_axes().joined(visible[0], visible[1])


def test_cep_plot_circle_is_the_cep_around_the_mean(table):
    fig = KINDS["cep"](table, figure("cep"), coords=[0, 1])
    mcs = {labels["method"]: mc for labels, mc in curves_of(table, LABEL_COLUMNS)}
    for ax in fig.axes:
        method = next(m for m in mcs if m.upper() in ax.get_title())
        points = mcs[method].theta_final[:, :2]
        (circle,) = [p for p in ax.patches if isinstance(p, Circle)]
        assert circle.get_radius() == pytest.approx(cep_radius(points))
        np.testing.assert_allclose(circle.center, points.mean(axis=0))
        np.testing.assert_allclose(ax.collections[0].get_offsets(), points)
        assert any(np.allclose(line.get_xydata(), [STAR[:2]]) for line in ax.get_lines())  # optimum marked
    assert fig.axes[0].get_xlim() == pytest.approx(fig.axes[1].get_xlim())  # same scale side by side


def test_draw_figure_writes_pdf_and_png(tmp_path, table):
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    for kind in ("mc_error", "mc_variance", "cep"):
        draw_figure(figure(kind), path, tmp_path / f"{kind}.pdf", tmp_path / f"{kind}.png")
        assert (tmp_path / f"{kind}.pdf").stat().st_size > 0 and (tmp_path / f"{kind}.png").stat().st_size > 0
    assert pd.read_csv(path).shape == table.shape
