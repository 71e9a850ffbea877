# rule view: the model-input view of one prepared image dataset (data/views.py).
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.data.views import prepare_view

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(lambda: prepare_view(Path(sm.input[0]), sm.wildcards.view, Path(sm.output[0])), sm.log[0])
