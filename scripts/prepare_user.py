# rules prepare_user, prepare_multiview: check and decode user-provided data (data/sources.py).
from fedrepro.cli import run_step
from fedrepro.data.registry import RAW_DIR
from fedrepro.data.sources import prepare_user_dataset

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(lambda: prepare_user_dataset(sm.params.dataset, RAW_DIR, sm.output[0], **sm.params.options), sm.log[0])
