# rule aggregate: the tidy table behind one figure.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.layout import Layout
from fedrepro.results.tables import write_figure_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(lambda: write_figure_table(sm.params.figure, Layout(sm.wildcards.scale).results, Path(sm.output[0])), sm.log[0])
