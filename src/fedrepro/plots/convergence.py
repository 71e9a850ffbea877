"""Metric versus communication rounds: one axes per panel, median over seeds, min-max band."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import finish_figure, mark_diverged, theme


# legend names of the columns that set the line style
STYLE_NAMES = {"eta_tilde": "step size"}


def _style_key(table: pd.DataFrame) -> str | None:
    """Line style encodes the step size when one curve label is run at several (Figs 2-6)."""
    if "eta_tilde" in table and table.groupby(["panel", "curve"])["eta_tilde"].nunique().max() > 1:
        return "eta_tilde"
    return None


def convergence(table: pd.DataFrame, figure: Figure, *, y: str = "grad_norm", ylabel: str | None = None,
                logy: bool = True, x: str = "round", xlabel: str = "communication rounds") -> plt.Figure:
    theme()
    panels = list(dict.fromkeys(table["panel"]))
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.6 * nrows), squeeze=False)
    style = _style_key(table)
    for ax, panel in zip(axes.flat, panels):
        sub = table[table["panel"] == panel]
        clean = sub[np.isfinite(sub[y]) & (sub[y] > 0 if logy else True)]
        sns.lineplot(data=clean.rename(columns=STYLE_NAMES), x=x, y=y, hue="curve", style=STYLE_NAMES.get(style),
                     estimator="median",
                     errorbar=("pi", 100), ax=ax, linewidth=1.3)
        mark_diverged(ax, sub, y)
        if logy:
            ax.set_yscale("log")
        ax.set_title(panel)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel or y)
        ax.legend(fontsize=7, title=None, ncols=2 if style else 1)
    return finish_figure(fig, axes, len(panels), table, figure, "line: median of {seeds} seeds, band: min-max")
