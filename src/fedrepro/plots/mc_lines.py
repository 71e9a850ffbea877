"""Monte Carlo runs against x (rounds by default): a thin line per run and a thick mean, one axes per curve
side by side (same y axis), optionally one more axes with every curve's thick line overlaid. `ncols` wraps
a panel's axes into rows of at most that many (one row by default), so that a figure of many curves
keeps a readable size.

Two kinds share this drawing and differ only in the series (results/cep.py cost_curves):
  mc_error    : thin f(θ_k^r) − f*,                 thick their mean            (Figs 3, 6, 9)
  mc_variance : thin (f(θ_k^r) − mean_r f(θ_k^r))², thick their mean = variance (Figs 4, 7)
"""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import counted_x, log_y, suptitle, theme
from fedrepro.results.monte_carlo import curves_of

# series -> (thin per-run key, thick key, name of the thick line)
SERIES = {"error": ("err", "mean_err", "mean error"), "variance": ("sqdev", "var", "variance")}


def method_colors(table: pd.DataFrame) -> dict[str, tuple]:
    """A colour per method, by sorted name, so a method keeps its colour across the figures."""
    methods = sorted(table["method"].unique())
    return dict(zip(methods, sns.color_palette("deep", len(methods))))


def _panel_axes(n_panels: int, per_panel: int, ncols: int | None) -> tuple[plt.Figure, list[list[plt.Axes]]]:
    """A figure whose each panel has `per_panel` axes in rows of at most `ncols`; the axes of each panel."""
    width = min(ncols or per_panel, per_panel)
    rows = math.ceil(per_panel / width)
    fig, grid = plt.subplots(n_panels * rows, width, figsize=(4.2 * width, 3.5 * n_panels * rows), squeeze=False)
    blocks = [list(grid[p * rows:(p + 1) * rows].flat) for p in range(n_panels)]
    for ax in [ax for block in blocks for ax in block[per_panel:]]:
        ax.set_visible(False)  # the rest of a panel's last row
    return fig, [block[:per_panel] for block in blocks]


def _lines(table: pd.DataFrame, figure: Figure, *, series: str, ylabel: str, logy: bool,
           ylim: Sequence[float] | None, start: float, overlay: str | None, x: str, xlabel: str,
           ncols: int | None) -> plt.Figure:
    """overlay: a series (error, variance) whose thick lines of all curves share one more axes;
    start: the first x drawn."""
    theme()
    thin_key, thick_key, thick_name = SERIES[series]
    curves = list(curves_of(table, figure.label_columns, x))
    panels = list(dict.fromkeys(labels["panel"] for labels, _ in curves))
    per_row = max(sum(labels["panel"] == p for labels, _ in curves) for p in panels)
    fig, panel_axes = _panel_axes(len(panels), per_row + int(bool(overlay)), ncols)
    for ax in [a for axes in panel_axes for a in axes[:per_row]][1:]:
        ax.sharey(panel_axes[0][0])  # one y scale for the curves side by side
    o_key, o_name = SERIES[overlay][1:] if overlay else (None, None)
    colors = method_colors(table)
    for axes, panel in zip(panel_axes, panels):
        mine = [(labels, mc) for labels, mc in curves if labels["panel"] == panel]
        for col, (labels, mc) in enumerate(mine):
            ax, color = axes[col], colors[labels["method"]]
            lines = mc.curves()
            keep = mc.x >= start
            ax.plot(mc.x[keep], lines[thin_key][:, keep].T, color=color, lw=0.6, alpha=0.35)
            ax.plot(mc.x[keep], lines[thick_key][keep], color=color, lw=2.4)
            ax.set_title(f"{labels['curve']} ({panel})\n{thick_name} at {x} {mc.x[-1]}: "
                         f"{lines[thick_key][-1]:.2e}", fontsize=9)
            _style(ax, logy, ylim, ylabel if ax.get_subplotspec().is_first_col() else None, xlabel, x)
            if overlay:
                o_keep = _overlay_points(mc.x, overlay, series, start)
                axes[-1].plot(mc.x[o_keep], lines[o_key][o_keep], color=color, lw=2.0, label=labels["curve"])
        if overlay:
            _style(axes[-1], logy, ylim if overlay == series else None, o_name, xlabel, x)
            axes[-1].set_title(f"{o_name} of each algorithm ({panel})", fontsize=9)
            axes[-1].legend(fontsize=7)
        for ax in axes[len(mine):per_row]:
            ax.set_visible(False)
    runs = max(mc.n_runs for _, mc in curves)
    suptitle(fig, figure, f"thin: each of {runs} Monte Carlo runs, thick: {thick_name}"
                          f"{'; y axis limited' if ylim is not None else ''}")
    fig.tight_layout()
    return fig


def _overlay_points(xs, overlay: str, series: str, start: float):
    """Which x the overlay draws: the drawn series' own from `start`; the variance without its first
    point (0 there: every run starts at θ^0, nothing to show on log axes); the error everywhere."""
    if overlay == series:
        return xs >= start
    return xs > xs[0] if overlay == "variance" else xs == xs


def _style(ax: plt.Axes, logy: bool, ylim: Sequence[float] | None, ylabel: str | None, xlabel: str, x: str) -> None:
    counted_x(ax, x)
    if logy:
        log_y(ax)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)


def mc_error(table: pd.DataFrame, figure: Figure, *, ylabel: str = "f(θ_k) − f*", logy: bool = True,
             ylim: Sequence[float] | None = None, start: float = 0, overlay: str | None = None, x: str = "round",
             xlabel: str = "round k", ncols: int | None = None) -> plt.Figure:
    return _lines(table, figure, series="error", ylabel=ylabel, logy=logy, ylim=ylim, start=start, overlay=overlay,
                  x=x, xlabel=xlabel, ncols=ncols)


def mc_variance(table: pd.DataFrame, figure: Figure, *, ylabel: str = "variance of f(θ_k) across runs",
                logy: bool = True, ylim: Sequence[float] | None = None, start: float = 1,
                overlay: str | None = None, x: str = "round", xlabel: str = "round k",
                ncols: int | None = None) -> plt.Figure:
    return _lines(table, figure, series="variance", ylabel=ylabel, logy=logy, ylim=ylim, start=start,
                  overlay=overlay, x=x, xlabel=xlabel, ncols=ncols)
