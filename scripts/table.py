# rule table: write one figure of kind `table` from its figure table (CSV, Markdown, LaTeX).
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.plots import write_table_figure

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(
    lambda: write_table_figure(sm.params.figure, Path(sm.input[0]), Path(sm.output.csv), Path(sm.output.md),
                               Path(sm.output.tex)),
    sm.log[0],
)
