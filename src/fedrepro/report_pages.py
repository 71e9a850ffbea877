"""The HTML report's own pages: its front page (what the project is; per paper and scale on disk, the verdicts,
the data's source and the code the runs ran) and one page per figure (the figure, what its runs ran on, and the
ledger rows that read it). Both are read from the files on disk: the claims ledgers and the runs' run.json."""

from __future__ import annotations

import base64
import html
import re
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fedrepro.claims.causes import not_found_at_paper_scale
from fedrepro.claims.kinds import DERIVED, IMPLEMENTATION, KINDS, PAPER, kinds_of, verdict_counts
from fedrepro.claims.robustness import MEANING, row_text
from fedrepro.claims.seal import read_ledger
from fedrepro.claims.table import COLUMNS, LEGEND_STYLE, STATUS_COLOURS, VERDICT_WORDS, legend, plain_words
from fedrepro.claims.ledger import ledger_look
from fedrepro.claims.seed_plan import FILE as PLAN_FILE, plan_finding, plan_text, read_plan
from fedrepro.errors import ResultsError
from fedrepro.experiments.runtable import Figure
from fedrepro.layout import Layout, scales_on_disk
from fedrepro.experiments.store import read_record, run_files
from fedrepro.results.tables import verify_drawn
from fedrepro.utils.atomic import write_text
from fedrepro.verdicts import VERDICTS

SHOWN_PACKAGES = ("python", "torch", "numpy", "pandas", "snakemake", "fedrepro")
INTRO = ("fedrepro reproduces the figures and checks the claims of five federated-learning optimization papers: "
         "FedPAGE, the SVRG method for probabilistically activated agents (fedvr), FedCluster, DeFedAvg and TDCD. "
         "It trains every method under each figure's settings, redraws the figure, and judges each claim of the "
         "paper on its own numbers: " + "; ".join(f"**{v}**: {w}" for v, w in VERDICT_WORDS.items()) + ".")
GUIDE = ("In the menu on the left, *Results* has one entry per paper: its figures, each on a page with the drawing, "
         "the settings it ran and every deviation from the paper at this scale, what its runs ran on, and the "
         "claims that read it; its *claims*: the ledger as a table (what each column means is above it), as CSV, "
         "and a figure of how solid each verdict is; its *audit*: the results checked against their records. "
         "The graph on this page is the pipeline, a dot per step (a rule of the workflow); a click on a step "
         "shows its code.")
SCALES_TEXT = ("smoke: a few rounds and seeds, to test the pipeline in minutes, too few to decide most claims; "
               "quick: minutes to an hour on a laptop CPU; paper: each paper's own settings")

# --- provenance of a set of runs ----------------------------------------------------------------------------


@dataclass
class Provenance:
    """What a set of runs ran on, as their run.json files record it."""
    runs: int
    missing: int  # runs without a readable run.json
    commits: Counter  # "abc1234", or "abc1234*" with uncommitted changes (COMMIT_NOTE)
    devices: Counter
    packages: dict[str, Counter]
    data: dict[tuple[str, str], tuple[str, str]]  # (dataset, file) -> (source, sha256 or tree sha256)

    @classmethod
    def of(cls, results: Path, run_ids: list[str]) -> Provenance:
        records = {rid: _record(results, rid) for rid in run_ids}
        return cls.of_records([r for r in records.values() if r is not None], len(run_ids))

    @classmethod
    def of_records(cls, records: list[dict[str, Any]], runs: int) -> Provenance:
        """From the run.json records read of `runs` runs (those without one count as missing)."""
        commits, devices, packages, data = Counter(), Counter(), {}, {}
        for record in records:
            git = record.get("git") or {}
            commit = (git.get("commit") or "unknown")[:7]
            commits[commit + ("*" if git.get("dirty") else "")] += 1
            devices[(record.get("device") or {}).get("device", "?")] += 1
            for name in SHOWN_PACKAGES:
                packages.setdefault(name, Counter())[str((record.get("packages") or {}).get(name))] += 1
            for entry in record.get("data_files") or []:
                source = entry.get("source") or ("stand-in" if "generator" in entry else "?")
                digest = entry.get("sha256") or entry.get("tree_sha256") or ""
                data[(entry.get("dataset", "?"), entry.get("name") or entry.get("path", "?"))] = (source, digest)
        return cls(runs, runs - len(records), commits, devices, packages, data)

    @property
    def sources(self) -> str:
        return ", ".join(sorted({source for source, _ in self.data.values()})) or "none recorded"


def _record(results: Path, run_id: str) -> dict[str, Any] | None:
    """A run's run.json, or None where it is missing or unreadable (the audit says why)."""
    try:
        return read_record(run_files(results, run_id).record)
    except (OSError, ResultsError):
        return None


COMMIT_NOTE = "a commit with * ran with uncommitted changes to the code"
SHOWN = 3  # values of a fact shown, the most frequent first


def _counted(counter: Counter, most: int = SHOWN) -> str:
    """"a (82), b (24), c (13) and 4 more" (the `most` most frequent), or the one value."""
    if len(counter) == 1:
        return str(next(iter(counter)))
    shown = [f"{key} ({n})" for key, n in counter.most_common(most)]
    return ", ".join(shown) + (f" and {len(counter) - most} more" if len(counter) > most else "")


# --- the front page -----------------------------------------------------------------------------------------


def rst_text(text: object) -> str:
    """`text` from a results file or a configuration as plain reStructuredText: on one line (so that nothing in it
    starts a directive such as `.. raw:: html`) and every markup character backslash-escaped (docutils then writes
    `<script>` as text)."""
    return re.sub(r"([\\`*_|:<>\[\]{}#=~^'\"-])", r"\\\1", " ".join(str(text).split()))


def figure_text(figure: Figure) -> dict[str, str]:
    """What the report's caption of a figure (workflow/report/figure.rst) says from the configuration, as rst_text."""
    return {"title": rst_text(figure.title), "caption": rst_text(figure.caption),
            "deviations": rst_text("; ".join(figure.deviations))}


def _rst_table(header: list[str], rows: list[list[str]]) -> str:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        lines += [f"   * - {row[0] or '..'}", *(f"     - {cell or '..'}" for cell in row[1:])]  # "..": an empty cell
    return "\n".join(lines) + "\n"


def report_link(text: str, path: str) -> str:
    """An RST link that opens the report's item `path` (its key in the report: the file's path from the workflow's
    directory) in place, with its caption in the menu: what a click on the item in the report's own list does
    (Snakemake's components/abstract_results.js, `ToggleViewManager.handleHtml`, and `app.showResultInfo`); nothing
    where the report lacks the item."""
    item = f"results['{path}']"  # (no ">" in the link: RST ends the address at one)
    return (f"`{text} <javascript:{item}&&app.setView({{navbarMode:'resultinfo',resultPath:'{path}',content:'html',"
            f"contentPath:{item}.data_uri}})>`__")


def _verdict_cells(counts: Counter, table: str | None) -> list[str]:
    """PASS, FAIL, INCONCLUSIVE: each count a link to the ledger's table in the report (`table`), where it is one."""
    return [report_link(str(counts.get(v, 0)), table) if table else str(counts.get(v, 0)) for v in VERDICTS]


def _readings(ledger: pd.DataFrame, kind: str) -> str:
    """"1 depends, 1 robust": the claims of `kind` by their robustness across readings."""
    rows = ledger.loc[kinds_of(ledger) == kind]
    kinds = Counter(r for r in rows.get("robustness", pd.Series(dtype=str)).fillna("") if r)
    return ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))


FRONT_STYLE = """
/* Snakemake's front page is a row of two: a column of this text, at most 32rem wide (Tailwind max-w-lg), and the
   rule graph (#rulegraph). The verdict table overflowed the column into the graph. Here the text takes the width
   it needs and the graph moves below it where the two do not fit side by side; the view starts at the top, so a
   page taller than the window scrolls from its start. */
div:has(> div > #rulegraph) { align-items: flex-start; }
div:has(> #rulegraph) { flex-wrap: wrap; }
div:has(> .prose .fedrepro-front) { flex: 0 1 56rem; min-width: 0; }
.prose:has(.fedrepro-front) { max-width: 56rem; }
.fedrepro-front table { display: block; overflow-x: auto; }
.fedrepro-front td, .fedrepro-front th { padding: 0.3em 0.6em; }
"""


def overview(root: Path, scale: str) -> str:
    """The report's front page (reStructuredText): what the project does and how to read the report; every paper
    with a claims ledger at any scale on disk (each verified, claims/seal.py), the verdicts of the paper's claims
    on one line and of its implementation checks on their own, each count of the report's scale a link to the
    ledger's table in the report."""
    rows = []
    for on_disk in scales_on_disk(root):
        out = Layout(on_disk, root)
        records = [r for r in (_record(out.results, d.name) for d in sorted(out.runs.glob("*"))) if r is not None]
        for ledger_path in sorted((out.results / "claims").glob("*.csv")):
            paper = ledger_path.stem
            ledger = read_ledger(ledger_path)
            table = out.ledger(paper, "html")  # in the report where it is of the report's scale
            key = str(table.relative_to(root)) if on_disk == scale and table.is_file() else None
            mine = [r for r in records if (r.get("spec") or {}).get("paper") == paper]
            provenance = Provenance.of_records(mine, len(mine))
            counts = verdict_counts(ledger)  # the paper's claims alone (claims/kinds.py)
            rows.append([f"``{paper}``", f"**{on_disk}**" if on_disk == scale else on_disk,
                         f"the paper's ({sum(counts.values())})", *_verdict_cells(counts, key),
                         _readings(ledger, PAPER) or "-", rst_text(provenance.sources),
                         rst_text(_counted(provenance.commits, most=1) or "-")])
            for kind, what in ((DERIVED, "derived from its numbers"), (IMPLEMENTATION, "implementation checks")):
                counted = verdict_counts(ledger, kind)
                if counted:
                    rows.append(["", "", f"*{what}* ({sum(counted.values())})", *_verdict_cells(counted, key),
                                 _readings(ledger, kind), "", ""])
    header = ["paper", "scale", "claims", *VERDICTS, "across readings", "data", "code (runs per commit)"]
    table = _rst_table(header, rows) if rows else "No claims ledger on disk yet.\n"
    out = Layout(scale, root)
    plan = read_plan(out.results / PLAN_FILE)
    # a plan that is not the one a second look was judged with is refused, as an edited ledger is (the audit's FAIL)
    wrong = [found for ledger in sorted((out.results / "claims").glob("*.json"))
             if (found := plan_finding(ledger_look(ledger), out.results))]
    if wrong:
        raise ResultsError(f"{wrong[0]}; the report shows no plan the ledgers were not judged with")
    if plan is not None:  # the adaptive seed plan of the report's scale (claims/seed_plan.py)
        table += f"\n{rst_text(plan_text(plan))} The plan: ``{Layout(scale).results / PLAN_FILE}``.\n"
    unfound = [f"``{paper}`` at {scale_}: {', '.join(claims)}" for paper, scale_, claims in passes_not_at_paper(root)]
    if unfound:
        table += ("\nPASS at a reduced scale but not at the paper scale (the reduced scale shows what the paper's "
                  "settings do not find): " + "; ".join(unfound) + ".\n")
    notes = "\n".join(f"- *{term}*: {text}" for term, text in (
        ("claims", f"the paper's claims are what it asserts, and only they count towards its verdicts; "
                   f"*derived* rows are {KINDS[DERIVED]}; "
                   f"*implementation checks*, on their own line, are {KINDS[IMPLEMENTATION]}; claims only "
                   f"reported, not judged, are in neither"),
        ("across readings", "where the paper leaves a choice open, we read it one way; "
                            + "; ".join(f"{k}: {w}" for k, w in MEANING.items())),
        ("data", "where the runs read it: the canonical host, an offline mirror, or a synthetic stand-in for the "
                 "paper's data"),
        ("code", f"the commit most runs ran, with their number; {COMMIT_NOTE}")))
    body = (f"{INTRO}\n\nThis report shows the **{scale}** scale ({SCALES_TEXT}). {GUIDE}\n\n"
            f"The verdicts of every paper and scale on disk (``results/<scale>/claims/<paper>.csv``); a count at "
            f"the {scale} scale opens its ledger's table:\n\n{table}\n{notes}\n")
    style = "".join(f"   {line}\n" for line in FRONT_STYLE.strip().splitlines())
    return (f".. raw:: html\n\n   <style>\n{style}   </style>\n\n.. container:: fedrepro-front\n\n"
            + textwrap.indent(body, "   ", lambda line: line.strip() != "") + "\n")


def passes_not_at_paper(root: Path) -> list[tuple[str, str, list[str]]]:
    """(paper, reduced scale, claims) for each paper whose ledgers at a reduced scale and at the paper scale are
    both on disk: the claims the reduced scale PASSes and the paper scale does not (causes.not_found_at_paper_scale)."""
    found = []
    paper_scale = Layout("paper", root)
    for scale in [s for s in scales_on_disk(root) if s != "paper"]:
        for ledger_path in sorted((Layout(scale, root).results / "claims").glob("*.csv")):
            at_paper = paper_scale.ledger(ledger_path.stem)
            if at_paper.is_file():
                claims = not_found_at_paper_scale(*(read_ledger(p) for p in (ledger_path, at_paper)))
                if claims:
                    found.append((ledger_path.stem, scale, claims))
    return found


@dataclass(frozen=True)
class Overview:
    """The front page, read from disk only when the report renders it (config["overview"] in workflow/rules/common.smk): the
    ledgers it counts are written by the run before the report, not known when the workflow is parsed. A ledger or
    a figure of the report's scale that is not as written stops the report: `error` (Snakemake's WorkflowError in
    the workflow: its message, no traceback) with the message of the check."""
    root: Path
    scale: str
    error: type[Exception] = ResultsError

    def __str__(self) -> str:
        try:
            verify_drawn(Layout(self.scale, self.root).figures)  # the report shows them as drawn, or not at all
            return overview(self.root, self.scale)
        except ResultsError as exc:
            raise self.error(f"no report: {exc}") from None


# --- a figure's page ---

def report_group(figure: Figure) -> str:
    """The report's subcategory of a figure, by its kind (FigureKind.group): what a reader looks for (curves over
    rounds or time, Monte Carlo statistics, time lines, tables); the claims ledger and the audit have their own."""
    return figure.kind.group


PAGE_STYLE = """body {font-family: sans-serif; font-size: 13px; margin: 10px; max-width: 1200px}
img {max-width: 100%} table {border-collapse: collapse; margin: 6px 0}
th, td {border: 1px solid #bbb; padding: 3px 6px; text-align: left; vertical-align: top}
th {background: #f0f0f0} .stand-in {color: #b71c1c; font-weight: bold} .caption {max-width: 60em}
""" + LEGEND_STYLE + " ".join(f".{status} {{background: {colour}}}" for status, colour in STATUS_COLOURS.items())


def _html_table(header: list[str] | None, rows: list[list[str]], row_class: list[str] | None = None) -> str:
    """A table of escaped `rows`' cells as given; without `header`, none (a table of facts)."""
    head = f"<tr>{''.join(f'<th>{html.escape(h)}</th>' for h in header)}</tr>" if header else ""
    body = "".join(f'<tr class="{cls}">' + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                   for row, cls in zip(rows, row_class or [""] * len(rows)))
    return f"<table>{head}{body}</table>"


def _folded(text: str, shown: int = 240) -> str:
    """Escaped text; beyond `shown` characters, the rest behind a click (<details>)."""
    if len(text) <= shown:
        return html.escape(text)
    return f"<details><summary>{html.escape(text[:shown])} ...</summary>{html.escape(text[shown:])}</details>"


def claim_rows(ledger: pd.DataFrame, figure: str) -> pd.DataFrame:
    """The ledger rows whose claim reads `figure`."""
    return ledger[ledger["figure"].str.split().apply(lambda names: figure in names)]


# the ledger's columns a figure's page shows of each claim that reads it (the ledger's table has them all)
FIGURE_CLAIM_COLUMNS = ("claim_id", "quote", "status", "cause", "robustness", "measured", "expected")


def figure_page(figure: Figure, drawing: Path, ledger_csv: Path, results: Path, names: dict[str, str] | None = None
                ) -> str:
    """A figure's page: its drawing (a PNG, embedded) or table (Markdown), what its runs ran on, its claims (the
    methods in their measured values by `names`, as in the ledger's table)."""
    from markdown_it import MarkdownIt

    if drawing.suffix == ".png":
        shown = f'<img alt="{html.escape(figure.title)}" src="data:image/png;base64,' \
                f'{base64.b64encode(drawing.read_bytes()).decode()}">'
    else:
        shown = MarkdownIt("commonmark", {"html": False}).enable("table").render(drawing.read_text())
    prov = Provenance.of(results, figure.run_ids)
    facts = [["runs", f"{prov.runs}" + (f" ({prov.missing} without a run.json)" if prov.missing else "")],
             ["code", html.escape(_counted(prov.commits) or "-") + f" ({COMMIT_NOTE})" * any(
                 c.endswith("*") for c in prov.commits)], ["device", html.escape(_counted(prov.devices))],
             ["packages", html.escape("; ".join(f"{name} {_counted(versions)}"
                                                for name, versions in prov.packages.items()))]]
    data = [[html.escape(d), html.escape(name), html.escape(source), f"<code>{html.escape(digest[:12])}</code>"]
            for (d, name), (source, digest) in sorted(prov.data.items())]
    claims = claim_rows(read_ledger(ledger_csv), figure.name)
    claim_table = (legend([*FIGURE_CLAIM_COLUMNS[:4], "seeds_needed", *FIGURE_CLAIM_COLUMNS[4:]]) + _html_table(
        [COLUMNS[c] for c in FIGURE_CLAIM_COLUMNS],
        [[html.escape(r["claim_id"]) + (f" ({html.escape(r['kind'])})" if r.get("kind", PAPER) != PAPER else ""),
          html.escape(r.get("quote", "")), html.escape(r["status"]),
          html.escape(r.get("cause", "") + (r.get("seeds_needed", "") and
                                            f" ({COLUMNS['seeds_needed']}: {r['seeds_needed']})")),
          html.escape(row_text(r)), _folded(plain_words(r.get("measured", ""), names or {})),
          html.escape(r.get("expected", ""))]
         for _, r in claims.iterrows()], list(claims["status"]))
        if len(claims) else "<p>No claim reads this figure.</p>")
    stand_in = (f'<p class="stand-in">Stand-in data, not the paper\'s: {html.escape("; ".join(figure.stand_ins))}</p>'
                if figure.stand_ins else "")
    deviations = (f" Unlike the paper at this scale: {html.escape('; '.join(figure.deviations))}."
                  if figure.deviations else " The paper's settings.")
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(figure.title)}</title>'
            f"<style>{PAGE_STYLE}</style></head>\n<body><h2>{html.escape(figure.title)}</h2>\n{stand_in}"
            f'<p class="caption">{html.escape(figure.caption)}</p>\n'
            f'<p class="caption">{html.escape(figure.paper)} {html.escape(figure.name)} at scale '
            f"{html.escape(figure.scale)}.{deviations}</p>\n{shown}\n<h3>Provenance</h3>\n"
            f"<p>What the figure's runs ran on, as each recorded it "
            f"(<code>results/{html.escape(figure.scale)}/runs/&lt;run_id&gt;/run.json</code>), and the data files "
            f"they read: where from (canonical host, offline mirror or synthetic stand-in) and their sha256.</p>\n"
            f"{_html_table(None, facts)}\n"
            f"{_html_table(['dataset', 'file', 'source', 'sha256'], data) if data else '<p>No data files recorded.</p>'}"
            f"\n<h3>Claims that read this figure</h3>\n{claim_table}\n</body></html>\n")


def write_figure_page(figure: Figure, drawing: Path, ledger_csv: Path, results: Path, out: Path,
                      names: dict[str, str] | None = None) -> None:
    write_text(out, figure_page(figure, drawing, ledger_csv, results, names))
