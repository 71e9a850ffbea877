# rule table: write one figure of kind `table` from its figure table (CSV, Markdown, LaTeX), once the table is
# the one aggregate wrote.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.plots import write_table_figure
from fedrepro.results.tables import verify_figure_table

sm = snakemake  # noqa: F821 (injected by Snakemake)


def main():
    verify_figure_table(Path(sm.input.table))
    write_table_figure(sm.params.figure, Path(sm.input.table), Path(sm.output.csv), Path(sm.output.md),
                       Path(sm.output.tex))


run_step(main, sm.log[0])
