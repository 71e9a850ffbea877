# rule claims_table: the claims ledger as an HTML table for the report.
from pathlib import Path

from fedrepro.claims.table import write_ledger_html
from fedrepro.cli import run_step

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(lambda: write_ledger_html(Path(sm.input[0]), Path(sm.output[0]), sm.wildcards.paper,
                                     sm.params.scale_note, sm.params.names), sm.log[0])
