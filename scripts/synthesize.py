# rules describe_standin, synthesize, synthesize_multiview: the TDCD synthetic stand-ins (data/synthetic.py).
from fedrepro.cli import run_step
from fedrepro.data.registry import RAW_DIR
from fedrepro.data.sources import synthesize, write_standin_provenance

sm = snakemake  # noqa: F821 (injected by Snakemake)
if sm.rule == "describe_standin":
    run_step(lambda: write_standin_provenance(sm.wildcards.standin, RAW_DIR), sm.log[0])
else:
    run_step(lambda: synthesize(sm.params.dataset, sm.output[0], **sm.params.options), sm.log[0])
