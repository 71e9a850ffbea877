"""Figure builders: one function per plot kind, chosen by the figure's `plot.kind`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import save_figure
from fedrepro.plots.convergence import convergence

KINDS = {"convergence": convergence}


def draw_figure(figure: Figure, table_path: Path, pdf: Path, png: Path) -> None:
    table = pd.read_csv(table_path)
    options = dict(figure.plot)
    kind = options.pop("kind")
    fig = KINDS[kind](table, figure, **options)
    save_figure(fig, figure, pdf, png)
