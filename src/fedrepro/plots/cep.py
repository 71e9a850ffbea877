"""CEP graph (fedvr Figs 5, 8): the final iterates θ_K of every Monte Carlo run projected on two
coordinates, their mean, the circle of CEP radius (median distance to the mean) around it and
the optimum θ*, one axes per curve side by side with the same scale, so the spreads compare."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Circle

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import suptitle, theme
from fedrepro.plots.mc_lines import method_colors
from fedrepro.results.monte_carlo import curves_of


def _square_limits(points: np.ndarray, pad: float = 0.12) -> tuple[tuple[float, float], tuple[float, float]]:
    """Equal x and y spans covering `points` (n, 2): one scale for every axes of a row."""
    low, high = points.min(axis=0), points.max(axis=0)
    center, half = (low + high) / 2, max(float((high - low).max()) / 2, 1e-12) * (1 + pad)
    return (center[0] - half, center[0] + half), (center[1] - half, center[1] + half)


def cep(table: pd.DataFrame, figure: Figure, *, coords: Sequence[int] = (0, 1),
        axis_labels: Sequence[str] | None = None) -> plt.Figure:
    theme()
    coords = tuple(coords)
    curves = list(curves_of(table, figure.label_columns))
    panels = list(dict.fromkeys(labels["panel"] for labels, _ in curves))
    ncols = max(sum(labels["panel"] == p for labels, _ in curves) for p in panels)
    fig, axes = plt.subplots(len(panels), ncols, figsize=(4.2 * ncols, 4.4 * len(panels)), squeeze=False)
    colors = method_colors(table)
    names = axis_labels or [f"θ_{i}" for i in coords]
    for row, panel in enumerate(panels):
        mine = [(labels, mc) for labels, mc in curves if labels["panel"] == panel]
        extent = []
        for ax, (labels, mc) in zip(axes[row], mine):
            points = mc.theta_final[:, coords]
            center, star = points.mean(axis=0), mc.theta_star[list(coords)]
            radii = mc.cep(coords)
            color = colors[labels["method"]]
            ax.scatter(points[:, 0], points[:, 1], s=16, color=color, alpha=0.75, label=f"θ_K, {mc.n_runs} runs")
            ax.plot(*center, marker="P", color="black", ms=9, ls="none", label="mean of θ_K", zorder=5)
            ax.add_patch(Circle(center, radii["cep_2d"], fill=False, color=color, lw=1.6, ls="--",
                                label=f"CEP circle, r = {radii['cep_2d']:.4f}"))
            ax.plot(*star, marker="*", color="crimson", ms=13, ls="none", label="optimum θ*", alpha=0.8, zorder=4)
            ax.set_title(f"{labels['curve']} ({panel})\nCEP {radii['cep_2d']:.4f} on these 2 coordinates, "
                         f"{radii['cep_full']:.4f} in R^{mc.theta_star.size}", fontsize=9)
            ax.set_xlabel(names[0])
            ax.set_ylabel(names[1])
            ax.legend(fontsize=7, loc="best")
            extent += [points, star[None], center[None] - radii["cep_2d"], center[None] + radii["cep_2d"]]
        xlim, ylim = _square_limits(np.concatenate(extent))
        for ax in axes[row, : len(mine)]:
            ax.set_xlim(*xlim)
            ax.set_ylim(*ylim)
            ax.set_aspect("equal", adjustable="box")
        for ax in axes[row, len(mine):]:
            ax.set_visible(False)
    suptitle(fig, figure, f"final round K = {curves[0][1].x[-1]}")
    fig.tight_layout()
    return fig
