# rule plot: draw one figure from its table, once the table is the one aggregate wrote.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.plots import draw_figure
from fedrepro.results.tables import verify_figure_table

sm = snakemake  # noqa: F821 (injected by Snakemake)


def main():
    verify_figure_table(Path(sm.input.table))
    draw_figure(sm.params.figure, Path(sm.input.table), Path(sm.output.pdf), Path(sm.output.png))


run_step(main, sm.log[0])
