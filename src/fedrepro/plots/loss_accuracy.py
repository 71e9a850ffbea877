"""Train loss and test accuracy against learning rounds (FedCluster Figs 2-6).

Each panel of the figure gets one axes per metric, side by side, and the panels fill a grid of
`ncols` panels a row: Fig. 2 puts [train loss, test accuracy] for rho_device = 0.1, 0.4 in the top row
and 0.7, 0.9 below (ncols 1); Fig. 4 has CIFAR-10 in the left and MNIST in the right column (ncols 2).
A line is the mean over seeds, its band +-1 standard deviation. The colour names the curve; when a
panel holds a curve at several values of `style` (e.g. rho_device), lighter shades mark larger values.
Methods listed in `dashed` (centralized SGD, a reference) are drawn dashed. Methods listed in
`style_independent` do not depend on `style` (centralized SGD trains on the pooled data, whatever
rho_device): one line per panel, at the panel's first value, under the bare curve name. Metrics listed
in `log_metrics` get a log y axis (a train loss whose curves merge on a linear one). `step_size` maps step-size
columns to their names: each legend entry gives its curve's values (e.g. "Q = 10, lr = 0.05"), also when a
figure has only one. `legend: outside` puts a
panel's legend to the right of its last axes, where it covers no curve (for one panel a row: ncols 1).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import counted_x, finish_figure, log_y, mark_diverged, panel_name, theme
from fedrepro.results.tables import paper_values

NAMES = {"train_loss": "train loss", "test_accuracy": "test accuracy", "train_accuracy": "train accuracy",
         "test_loss": "test loss", "test_f1": "test F1", "test_top5": "top-5 test accuracy",
         "rho_device": "ρ_device", "rho_cluster": "ρ_cluster"}
LEGENDS = ("inside", "outside")


def _shades(color: tuple, n: int) -> list[tuple]:
    """n shades of `color`, from itself towards white (never quite white)."""
    return [tuple(np.asarray(color) * (1 - t) + t) for t in np.linspace(0.0, 0.55, n)] if n > 1 else [color]


def _line(ax: plt.Axes, run: pd.DataFrame, y: str, x: str, **style) -> None:
    stats = run[np.isfinite(run[y])].groupby(x)[y].agg(["mean", "std"]).fillna(0.0)
    ax.plot(stats.index, stats["mean"], lw=1.4, **style)
    ax.fill_between(stats.index, stats["mean"] - stats["std"], stats["mean"] + stats["std"], alpha=0.18, lw=0,
                    color=style["color"])


def _style_values(curve: pd.DataFrame, style: str | None, independent: bool) -> list:
    """The values of `style` a curve is drawn at: each one, only the first for a curve independent of
    it, [None] (no style) when the curve has no such column."""
    if style not in curve:
        return [None]
    values = sorted(curve[style].unique())
    return values[:1] if independent else values


def loss_accuracy(table: pd.DataFrame, figure: Figure, *, metrics: Sequence[str] = ("train_loss",), ncols: int = 1,
                  style: str | None = None, dashed: Sequence[str] = (), style_independent: Sequence[str] = (),
                  log_metrics: Sequence[str] = (), step_size: Mapping[str, str] | None = None,
                  legend: str = "inside", x: str = "round",
                  xlabel: str = "learning rounds", common_x: bool = False) -> plt.Figure:
    # common_x: the figure table already ends each panel where its shortest curve does (results/tables.py)
    if legend not in LEGENDS or (legend == "outside" and ncols > 1):
        raise ValueError(f"figure {figure.name}: plot option legend = {legend!r} with ncols = {ncols}; allowed: "
                         "inside, or outside with ncols 1")
    theme()
    panels = list(dict.fromkeys(table["panel"]))
    ncols = min(ncols, len(panels))
    nrows, width = math.ceil(len(panels) / ncols), ncols * len(metrics)
    fig, axes = plt.subplots(nrows, width, figsize=(4.3 * width, 3.4 * nrows), squeeze=False)
    labels = list(dict.fromkeys(table["curve"]))
    base = dict(zip(labels, sns.color_palette("deep", len(labels))))  # a curve keeps its colour in every panel
    for i, panel in enumerate(panels):
        sub = table[table["panel"] == panel]
        row, col = divmod(i, ncols)
        for j, metric in enumerate(metrics):
            ax = axes[row, col * len(metrics) + j]
            drawn = []
            for label, curve in sub.groupby("curve", sort=False):
                method = curve["method"].iloc[0]
                independent = method in style_independent
                values = _style_values(curve, style, independent)
                for value, color in zip(values, _shades(base[label], len(values))):
                    run = curve if value is None else curve[curve[style] == value]
                    named = value is not None and not independent
                    name = f"{label}, {NAMES.get(style, style)} = {_scaled(run, style, value)}" if named else label
                    name += _steps(run, step_size or {})
                    _line(ax, run, metric, x, color=color, ls="--" if method in dashed else "-", label=name)
                    drawn.append(run)
            if metric in log_metrics:
                log_y(ax)
            off_scale = mark_diverged(ax, pd.concat(drawn), metric, x)
            title = panel_name(figure, panel)
            title = title if len(metrics) == 1 else f"{title}: {NAMES.get(metric, metric)}"
            ax.set_title(title + off_scale, fontsize=9)
            ax.set_xlabel(xlabel)
            counted_x(ax, x)
            ax.set_ylabel(NAMES.get(metric, metric))
        _legend(axes[row, col * len(metrics)], axes[row, col * len(metrics) + len(metrics) - 1], legend)
    band = "line: mean of {seeds} seeds, band: ±1 sd"
    return finish_figure(fig, axes, len(panels) * len(metrics), table, figure, band)


def _scaled(run: pd.DataFrame, key: str, value) -> str:
    """A value of the style column, with the paper's where this scale maps it: "2 (paper 10)"."""
    paper = paper_values(run, key)[value]
    return f"{value:g}" if paper == value else f"{value:g} (paper {paper:g})"


def _steps(run: pd.DataFrame, columns: Mapping[str, str]) -> str:
    """", lr = 0.05" for each step-size column with one value in the curve's rows."""
    shown = []
    for column, name in columns.items():
        values = run[column].dropna().unique() if column in run else []
        if len(values) == 1:
            shown.append(f"{name} = {values[0]:g}")
    return "".join(f", {s}" for s in shown)


def _legend(first: plt.Axes, last: plt.Axes, where: str) -> None:
    """The panel's legend (its curves are those of `first`): inside `first`, or outside to the right of
    `last`, the panel's last axes."""
    handles, labels = first.get_legend_handles_labels()
    if where == "outside":
        last.legend(handles, labels, fontsize=6.5, title=None, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                    borderaxespad=0.0)
    else:
        first.legend(handles, labels, fontsize=6.5, title=None)
