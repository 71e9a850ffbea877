"""The generated parts of each paper's page, docs/papers/<paper>.md: its figures at every scale, from the
configuration, and its current verdicts at the quick scale, from the claims ledger on disk. `fedrepro docs` rewrites
each part between its markers and leaves the rest of the page, written by hand, as it is; `fedrepro docs --check`
says whether the configuration's part is current (a test runs it)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from fedrepro.claims.kinds import PAPER, counts_text
from fedrepro.claims.robustness import row_text
from fedrepro.errors import ConfigError
from fedrepro.schemas import SCALES
from fedrepro.experiments.runtable import RunTable
from fedrepro.layout import Layout

DOCS = Path("docs/papers")
LEDGER_SCALE = "quick"  # the verdicts a page shows: the default scale's


def _markers(part: str) -> tuple[str, str]:
    return (f"<!-- generated: {part} (`fedrepro docs` writes it; do not edit by hand) -->",
            f"<!-- end of generated: {part} -->")


def figures_part(paper: str, tables: dict[str, RunTable]) -> str:
    """Each figure's title at the paper's scale and at quick, and its runs at every scale; what quick changes in
    every figure of the paper."""
    lines = ["### Figures at each scale", "",
             "| figure | title at the paper's scale | at `quick` | runs: " + " / ".join(SCALES) + " |",
             "|---|---|---|---|"]
    for figure in tables["paper"].paper_figures(paper):
        quick = tables["quick"].figure(paper, figure.name)
        runs = " / ".join(str(len(tables[s].figure(paper, figure.name).run_ids)) for s in SCALES)
        at_quick = "same" if quick.title == figure.title else quick.title
        lines.append(f"| {figure.name} | {figure.title} | {at_quick} | {runs} |")
    note = tables["quick"].scale_note(paper)
    return "\n".join(lines + (["", note] if note else [])) + "\n"


def ledger_part(paper: str, root: Path = Path(".")) -> str | None:
    """The verdicts of the ledger at LEDGER_SCALE on disk, or None without one."""
    path = Layout(LEDGER_SCALE, root).ledger(paper)
    if not path.is_file():
        return None
    ledger = pd.read_csv(path, dtype=str, keep_default_na=False)
    lines = [f"### Verdicts at `{LEDGER_SCALE}`", "",
             f"From `{path.relative_to(root)}` ({counts_text(ledger)}); [docs/ledgers.md](../ledgers.md) says how to "
             f"read them, [docs/claims.md](../claims.md) the kinds and causes.",
             "", "| claim | kind | verdict | cause | seeds needed | across readings |", "|---|---|---|---|---|---|"]
    for _, row in ledger.iterrows():
        lines.append(f"| {row['claim_id']} | {row.get('kind', '') or PAPER} | {row['status']} | "
                     f"{row.get('cause', '') or '-'} | {row.get('seeds_needed', '') or '-'} | {row_text(row) or '-'} |")
    return "\n".join(lines) + "\n"


def _replace(text: str, part: str, body: str) -> str:
    begin, end = _markers(part)
    block = f"{begin}\n{body}{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    return text.rstrip("\n") + f"\n\n{block}\n"


def current_part(text: str, part: str) -> str | None:
    begin, end = _markers(part)
    found = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, re.DOTALL)
    return found.group(1) if found else None


def run_tables(config_dir: Path = Path("config")) -> dict[str, RunTable]:
    from fedrepro.validate import load_and_validate

    return {scale: load_and_validate({"scale": scale}, config_dir)[1] for scale in SCALES}


def write_docs(papers: list[str], docs: Path = DOCS, check: bool = False, root: Path = Path(".")) -> list[str]:
    """Rewrite the generated parts of the papers' pages (with `check`, write nothing); returns the pages whose
    configuration part was not current."""
    tables = run_tables(root / "config")
    stale = []
    for paper in papers:
        page = docs / f"{paper}.md"
        if not page.is_file():
            raise ConfigError(f"{page} does not exist: a paper's page is written by hand, its generated parts added")
        text = page.read_text()
        figures = figures_part(paper, tables)
        if current_part(text, "figures") != figures:
            stale.append(str(page))
        if check:
            continue
        text = _replace(text, "figures", figures)
        ledger = ledger_part(paper, root)
        if ledger is not None:
            text = _replace(text, "ledger", ledger)
        page.write_text(text)
    return stale
