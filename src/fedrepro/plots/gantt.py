"""Clients' busy intervals over simulated time (DeFedAvg Fig. 1: the local training protocols of FedAvg,
DeFedAvg-nIID and DeFedAvg-IID with N = 3 clients, n = 2).

The figure table holds the runs' timelines (results/tables.py timeline_rows). One panel per curve (a run,
one seed), stacked in `ncols` columns; one lane per client; bars for train / upload / download coloured by
kind, consecutive trainings of a client in alternating shades and labelled by training index where the
bar is wide enough (a paused training shows as two bars with one index); dashed vertical lines where the
rounds close. Intervals of zero length (free links) are not drawn.

Options (the figure's `plot`):
  until : the x range's end in simulated seconds (default: the last interval's end)
  seed  : the seed shown (default: each run's first)
  ncols : panels a row (default 1)
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import finish_figure, theme

# kind -> colours (trainings alternate between two shades)
COLORS = {"train": ("#4c72b0", "#9bb4dc"), "upload": ("#dd8452",), "download": ("#55a868",)}
HEIGHT = {"train": 0.7, "upload": 0.35, "download": 0.35}  # transfers drawn thinner, over the training lane


def _panels(table: pd.DataFrame) -> list[tuple[str, str]]:
    return list(dict.fromkeys(zip(table["panel"], table["curve"])))


def _lane(ax: plt.Axes, spans: pd.DataFrame, y: float, until: float) -> None:
    for row in spans.itertuples():
        end = min(row.end, until)
        if end <= row.start or row.start >= until:
            continue
        shades = COLORS[row.kind]
        color = shades[int(row.training) % len(shades)] if row.training >= 0 else shades[0]
        h = HEIGHT[row.kind]
        ax.broken_barh([(row.start, end - row.start)], (y - h / 2, h), facecolors=color, edgecolor="white",
                       linewidth=0.5, zorder=3 if row.kind == "train" else 4)
        if row.kind == "train" and (end - row.start) > 0.04 * until:
            ax.text((row.start + end) / 2, y, str(int(row.training)), ha="center", va="center", fontsize=6,
                    color="white" if int(row.training) % 2 == 0 else "black", zorder=5)


def gantt(table: pd.DataFrame, figure: Figure, *, until: float | None = None, seed: int | None = None,
          ncols: int = 1) -> plt.Figure:
    theme()
    panels = _panels(table)
    several = table["panel"].nunique() > 1
    ncols = max(1, min(ncols, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    clients = sorted(int(c) for c in table.loc[table["kind"] != "round", "client"].unique())
    end = float(table.loc[table["kind"] != "round", "end"].max()) if until is None else float(until)
    if not end > 0:
        raise ValueError(f"figure {figure.name}: gantt until {until!r}; give a positive number of seconds")
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.5 * ncols, (0.45 * len(clients) + 1.1) * nrows),
                             squeeze=False, sharex=True)
    shown = []
    for i, (ax, (panel, curve)) in enumerate(zip(axes.flat, panels)):
        run = table[(table["panel"] == panel) & (table["curve"] == curve)]
        seeds = sorted(run["seed"].unique())
        pick = seeds[0] if seed is None else seed
        if pick not in seeds:
            raise ValueError(f"figure {figure.name}: gantt seed {seed} is not a seed of curve {curve!r}; "
                             f"its seeds: {', '.join(map(str, seeds))}")
        shown.append(pick)
        run = run[run["seed"] == pick]
        spans = run[run["kind"] != "round"]
        for y, client in enumerate(clients):
            _lane(ax, spans[spans["client"] == client], y, end)
        for close in run.loc[(run["kind"] == "round") & (run["start"] <= end), "start"]:
            ax.axvline(close, color="0.3", ls="--", lw=0.8, zorder=2)
        ax.set_yticks(range(len(clients)), [f"client {c}" for c in clients])
        ax.set_ylim(len(clients) - 0.5, -0.5)  # client 0 on top
        ax.set_xlim(0, end)
        ax.grid(axis="y", visible=False)
        ax.set_title(f"{panel}: {curve}" if several and panel != curve else curve, fontsize=9)
        if i + ncols >= len(panels):  # the lowest panel of its column (the x axis is shared)
            ax.set_xlabel("simulated time (s)")
    legend = [Patch(color=COLORS["train"][0], label="local training (even index)"),
              Patch(color=COLORS["train"][1], label="local training (odd index)"),
              Patch(color=COLORS["upload"][0], label="upload"), Patch(color=COLORS["download"][0], label="download"),
              Line2D([], [], color="0.3", ls="--", lw=0.8, label="round closes")]
    axes.flat[0].legend(handles=legend, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    band = "seed " + ", ".join(map(str, sorted(set(shown)))) + " shown of {seeds}"
    return finish_figure(fig, axes, len(panels), table, figure, band)
