# rule register_user_data: record the sha256 of the user's files for a dataset the pipeline cannot download.
from fedrepro.cli import run_step
from fedrepro.data.registry import RAW_DIR
from fedrepro.data.sources import write_user_provenance

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(lambda: write_user_provenance(sm.wildcards.user_dataset, RAW_DIR), sm.log[0])
