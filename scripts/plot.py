# rule plot: draw one figure from its table.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.plots import draw_figure

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(lambda: draw_figure(sm.params.figure, Path(sm.input[0]), Path(sm.output.pdf), Path(sm.output.png)), sm.log[0])
