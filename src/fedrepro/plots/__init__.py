"""Figure builders: one function per plot kind, chosen by the figure's `plot.kind`; the kind `table`
is written as text tables instead (plots/table.py). Each builder takes the figure table (whose rows
depend on the kind: results/tables.py ROWS; a `gantt` figure's are timeline intervals, a `clients`
figure's the clients of a timing trace, not metrics)."""

from __future__ import annotations

from pathlib import Path

from fedrepro.experiments.runtable import Figure
from fedrepro.plots.common import save_figure
from fedrepro.plots.cep import cep
from fedrepro.plots.clients import clients
from fedrepro.plots.convergence import convergence
from fedrepro.plots.gantt import gantt
from fedrepro.plots.loss_accuracy import loss_accuracy
from fedrepro.plots.mc_lines import mc_error, mc_variance
from fedrepro.plots.table import write_table_figure
from fedrepro.results.tables import read_figure_table

KINDS = {"convergence": convergence, "mc_error": mc_error, "mc_variance": mc_variance, "cep": cep,
         "loss_accuracy": loss_accuracy, "gantt": gantt, "clients": clients}


__all__ = ["KINDS", "draw_figure", "write_table_figure"]


def draw_figure(figure: Figure, table_path: Path, pdf: Path, png: Path) -> None:
    table = read_figure_table(table_path)
    options = dict(figure.plot)
    kind = options.pop("kind")
    if kind not in KINDS:
        raise ValueError(f"figure {figure.name} of kind {kind!r} is not drawn: its files are "
                         f".{' and .'.join(figure.formats)}")
    fig = KINDS[kind](table, figure, **options)
    save_figure(fig, figure, pdf, png)
