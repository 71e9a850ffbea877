# rule figure_page: a figure's page in the HTML report: the figure, what its runs ran on, the claims that read it.
from pathlib import Path

from fedrepro.cli import run_step
from fedrepro.layout import Layout
from fedrepro.report_pages import write_figure_page
from fedrepro.results.tables import verify_figure_file

sm = snakemake  # noqa: F821 (injected by Snakemake)


def main():
    verify_figure_file(Path(sm.input.drawing))  # the page shows the figure as it was drawn, or none
    write_figure_page(sm.params.figure, Path(sm.input.drawing), Path(sm.input.ledger),
                      Layout(sm.wildcards.scale).results, Path(sm.output[0]), sm.params.names)


run_step(main, sm.log[0])
