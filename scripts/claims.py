# rule claims: check every claim of one paper against our figure tables, then draw its claims figure. The
# ledger's record holds its sha256, which everything built from the ledger checks first (claims/seal.py); a failure
# leaves its error beside the ledger Snakemake deletes, for the audit to name (failures.py).
from pathlib import Path

from fedrepro.claims.ledger import write_ledger
from fedrepro.claims.sequential import Look
from fedrepro.claims.support import DECIDE
from fedrepro.cli import run_step
from fedrepro.layout import Layout
from fedrepro.plots.claims import draw_claims_figure
from fedrepro.results.tables import verify_figure_table

sm = snakemake  # noqa: F821 (injected by Snakemake)


def main():
    for table in [*sm.input.tables, *sm.input.alternatives]:
        verify_figure_table(Path(table))
    ledger = Path(sm.output.ledger)
    write_ledger(Path(sm.input.claims), [Path(p) for p in sm.input.tables], sm.params.figures, sm.wildcards.scale,
                 ledger, Path(sm.output.record), sm.params.scale_note, sm.params.readings, sm.params.alternatives,
                 sm.params.seeds, Look(**{**sm.params.look, "planned": tuple(sm.params.look["planned"])}))
    draw_claims_figure(ledger, sm.wildcards.paper, DECIDE, Path(sm.output.pdf), Path(sm.output.png))


run_step(main, sm.log[0], failure=Layout(sm.wildcards.scale).ledger_failure(sm.wildcards.paper))
