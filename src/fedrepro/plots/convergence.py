"""Metric against x (communication rounds by default): one axes per panel, median over seeds, min-max band.

`style` names a label column (e.g. a step size) that sets the line style when one curve label is run
at several of its values; `style_name` is its name in the legend. When each curve runs at one value (a scale
that keeps one step size), the legend names it beside the curve instead.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import counted_x, finish_figure, log_y, mark_diverged, panel_name, theme


def _varies_within_curves(table: pd.DataFrame, column: str | None) -> bool:
    """Whether one curve label of a panel is run at several values of `column` (then they need a style)."""
    return column is not None and column in table and table.groupby(["panel", "curve"])[column].nunique().max() > 1


def _named_value(table: pd.DataFrame, column: str, name: str) -> pd.DataFrame:
    """Each curve label with its one value of `column` (e.g. "FedPAGE, step size = 0.1"); a curve without one
    keeps its label."""
    value = table[column].map(lambda v: "" if pd.isna(v) else f", {name} = {v:g}" if isinstance(v, float)
                              else f", {name} = {v}")
    return table.assign(curve=table["curve"].astype(str) + value)


def convergence(table: pd.DataFrame, figure: Figure, *, y: str, ylabel: str | None = None,
                logy: bool = True, x: str = "round", xlabel: str = "communication rounds",
                style: str | None = None, style_name: str | None = None) -> plt.Figure:
    theme()
    panels = list(dict.fromkeys(table["panel"]))
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.6 * nrows), squeeze=False)
    if _varies_within_curves(table, style):
        names = {style: style_name} if style_name else {}
    else:
        table = _named_value(table, style, style_name or style) if style in table else table
        style, names = None, {}
    for ax, panel in zip(axes.flat, panels):
        sub = table[table["panel"] == panel]
        clean = sub[np.isfinite(sub[y]) & (sub[y] > 0 if logy else True)]
        sns.lineplot(data=clean.rename(columns=names), x=x, y=y, hue="curve", style=names.get(style, style),
                     estimator="median", errorbar=("pi", 100), ax=ax, linewidth=1.3)
        if logy:
            log_y(ax)
        off_scale = mark_diverged(ax, sub, y, x)
        counted_x(ax, x)
        ax.set_title(panel_name(figure, panel) + off_scale)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel or y)
        ax.legend(fontsize=7, title=None, ncols=2 if style else 1)
    return finish_figure(fig, axes, len(panels), table, figure, "line: median of {seeds} seeds, band: min-max")
