# rule download: fetch one dataset from its canonical host or the configured mirror.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.data import fetch_dataset, resolve_mirror
from fedrepro.data.registry import RAW_DIR

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(
    lambda: fetch_dataset(sm.wildcards.dataset, Path(RAW_DIR), resolve_mirror(sm.params.mirror)),
    sm.log[0],
)
