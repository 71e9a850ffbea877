# rule prepare: decode the raw files of one dataset into data/prepared/<dataset>.npz.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.data import prepare_dataset

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(lambda: prepare_dataset(sm.wildcards.dataset, Path(sm.input[0]).parent, Path(sm.output[0])), sm.log[0])
