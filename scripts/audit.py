# rule audit_paper: the audit of one paper's results, as Markdown and HTML; the summary goes to stderr.
import logging
import sys
from pathlib import Path

from fedrepro.claims.seal import verify_ledger
from fedrepro.cli import ledger_rebuilder, run_step
from fedrepro.results.audit import Checkout, audit_paper
from fedrepro.results.audit_report import summary, write_report

sm = snakemake  # noqa: F821 (injected by Snakemake)


def main():
    checkout = Checkout.of(Path("."))
    scale = sm.wildcards.scale
    paper = sm.wildcards.paper
    audit = audit_paper(paper, sm.params.figures, scale, f"`{scale}` of this pipeline run", checkout,
                        sm.params.alternatives, ledger_rebuilder(paper, scale, sm.params.ledger), verify_ledger)
    write_report(audit, checkout, Path(sm.output.md))
    text = summary([audit], {(scale, audit.paper): sm.output.md})
    logging.getLogger("fedrepro.audit").info("%s", text)
    print(text, file=sys.stderr)


run_step(main, sm.log[0])
