"""Who trains for the server: each client's share of the consumed trainings against its speed, from the
timing trace (DeFedAvg claim 8: FedBuff relies on fast clients, DeFedAvg-nIID's send buffers do not).

The figure table holds one row per (run, seed, client) (results/tables.py client_rows). One panel per
figure panel; one point per client and seed, coloured by curve; the legend gives each curve's Spearman
rank correlation of speed and participation (mean over seeds), the statistic the claim checks.

Options (the figure's `plot`):
  ncols : panels a row (default 4)
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import finish_figure, theme
from fedrepro.results.summaries import rank_correlations


def clients(table: pd.DataFrame, figure: Figure, *, ncols: int = 4) -> plt.Figure:
    theme()
    panels = list(dict.fromkeys(table["panel"]))
    ncols = max(1, min(ncols, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.9 * nrows), squeeze=False)
    labels = list(dict.fromkeys(table["curve"]))
    palette = dict(zip(labels, sns.color_palette("deep", len(labels))))  # as plots/loss_accuracy.py
    rho = rank_correlations(table, figure.label_columns, "speed", "participation").groupby("run_id")["rho"].mean()
    for ax, panel in zip(axes.flat, panels):
        sub = table[table["panel"] == panel]
        # per run and seed: a run's speeds share its compute_time_scale (which AsySG's one gradient skips)
        fastest = sub.groupby(["run_id", "seed"])["speed"].transform("max")
        fair = sub.groupby(["run_id", "seed"])["client"].transform("size")  # clients: 1 = an equal share
        for (run_id, curve), run in sub.groupby(["run_id", "curve"], sort=False):
            ax.scatter(run["speed"] / fastest[run.index], run["participation_share"] * fair[run.index], s=9,
                       alpha=0.6, color=palette[curve], label=f"{curve} (ρ = {rho[run_id]:+.2f})", linewidths=0)
        ax.axhline(1.0, color="0.4", lw=0.7, ls=":")
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel("client speed / fastest", fontsize=8)
        ax.set_ylabel("consumed trainings / equal share", fontsize=8)
        ax.legend(fontsize=6, loc="best")
    return finish_figure(fig, axes, len(panels), table, figure, "points: every client of each of {seeds} seeds")
