# rule claims: check every claim of one paper against our figure tables.
from pathlib import Path

from fedrepro.claims.ledger import write_ledger
from fedrepro.cli import run_step

sm = snakemake  # noqa: F821 (injected by Snakemake)
run_step(
    lambda: write_ledger(Path(sm.input.claims), [Path(p) for p in sm.input.tables], sm.params.figures,
                         sm.params.scale, Path(sm.output[0])),
    sm.log[0],
)
