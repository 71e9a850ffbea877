"""The generated parts of each paper's page, docs/papers/<paper>.md: its figures at every scale, from the
configuration, and its expected results, from the reference committed beside the page (expected.py). `fedrepro
docs` rewrites each part between its markers and leaves the rest of the page, written by hand, as it is; `fedrepro
docs --check` says whether every part is current (a test runs it, so the pages cannot drift from the reference).

What a person must say about a verdict (why a claim fails or stays open, what a reading changes) lives in
docs/papers/<paper>/notes.yaml, keyed by scale and claim id and by the verdict it explains; the verdict table shows
each note in its claim's row, and a note whose verdict is no longer the reference's stops `fedrepro docs` (and its
test), so hand-written prose cannot drift from the ledgers it explains."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import yaml

from fedrepro.claim_card import anchor, card, reason
from fedrepro.claims.kinds import DERIVED, IMPLEMENTATION, PAPER, REPORT, counts_text, kinds_of
from fedrepro.claims.robustness import decode, row_text
from fedrepro.expected import DOCS, read_reference, reference_dir, reference_scales, stamp_text
from fedrepro.errors import ConfigError
from fedrepro.scale_costs import page_part, readme_part, scale_costs
from fedrepro.schemas import SCALES
from fedrepro.experiments.runtable import RunTable
from fedrepro.utils.yaml_file import read_yaml
from fedrepro.verdicts import FAIL, PASS, VERDICTS

CARD, COSTS = "card", "costs"  # the generated part that opens each page; what a paper costs at each scale
NOTES = "notes.yaml"  # docs/papers/<paper>/notes.yaml: {scale: {claim_id: {verdict, note}}}
QUOTED, MEASURED = 120, 160  # characters of the paper's words and of the measured value a page shows; ledger.csv has all


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


def _cell(text: str, most: int | None = None) -> str:
    """Text for a markdown table cell: one line, no bare `|`, cut at a word to `most` characters."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    if most and len(text) > most:
        text = text[:most].rsplit(" ", 1)[0] + " …"
    return text or "-"


def support_text(row: pd.Series) -> str:
    """A verdict's support: the p-values of a tested check (the one that decided, both when open), else the share
    of bootstrap resamples that agree. The error rate its rule states is said once above the table
    (verdicts_table)."""
    p_pass, p_fail = row.get("p_pass", ""), row.get("p_fail", "")
    if p_pass or p_fail:
        shown = {PASS: [("p_pass", p_pass)], FAIL: [("p_fail", p_fail)]}.get(
            row["status"], [("p_pass", p_pass), ("p_fail", p_fail)])
        return ", ".join(f"{name} {float(p):.2g}" for name, p in shown if p)
    if row.get("support", ""):
        return f"{float(row['support']):.0%} of resamples"
    return ""


def readings_text(row: pd.Series) -> str:
    """The verdict across readings, where some alternative was judged; "-" where none was (the table's heading
    says why once, instead of every row)."""
    return row_text(row) if any(a.verdict is not None for a in decode(row.get("alternatives", ""))) else "-"


def read_notes(paper: str, docs: Path = DOCS) -> dict[str, dict[str, dict[str, str]]]:
    """The paper's hand-written notes ({} without a notes file); a ConfigError names what is malformed."""
    path = docs / paper / NOTES
    if not path.is_file():
        return {}
    try:
        notes = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({err})") from err
    for scale, claims in notes.items() if isinstance(notes, dict) else [(None, None)]:
        if scale not in SCALES or not isinstance(claims, dict):
            raise ConfigError(f"{path}: expected {{scale: {{claim_id: {{verdict, note}}}}}} with a scale of "
                              f"{', '.join(SCALES)}; found {scale!r}")
        for claim, entry in claims.items():
            if not isinstance(entry, dict) or set(entry) != {"verdict", "note"} or entry["verdict"] not in VERDICTS:
                raise ConfigError(f"{path}: {scale} {claim}: expected {{verdict: one of {', '.join(VERDICTS)}, "
                                  f"note: text}}")
    return notes


def stale_notes(paper: str, scale: str, ledger: pd.DataFrame, notes: dict[str, dict[str, str]]) -> list[str]:
    """The notes at `scale` that no longer explain the reference: their claim is gone or its verdict moved."""
    verdicts = dict(zip(ledger["claim_id"], ledger["status"]))
    return [f"docs/papers/{paper}/{NOTES}: {scale} {claim} explains {entry['verdict']}, the reference ledger says "
            f"{verdicts.get(claim, 'nothing (no such claim)')}: rewrite or remove the note"
            for claim, entry in notes.items() if verdicts.get(claim) != entry["verdict"]]


def verdicts_table(paper: str, scale: str, ledger: pd.DataFrame, stamp: dict,
                   notes: dict[str, dict[str, str]] | None = None) -> list[str]:
    """One scale's reference verdicts: the paper's claims as a table, each with its hand-written note, the other
    kinds on a line of their own."""
    folder, notes = f"{paper}/{scale}", notes or {}
    mine = ledger[kinds_of(ledger) == PAPER]
    rates = sorted({r for r in mine.get("error_rate", pd.Series(dtype=str)) if r})
    unjudged = not any(readings_text(row) != "-" for _, row in mine.iterrows())
    lines = [f"#### At `{scale}`", "",
             f"{counts_text(ledger)}. From [{folder}/ledger.csv]({folder}/ledger.csv), {stamp_text(stamp)}.",
             "", "Error rates the rules state: " + "; ".join(rates) + "." if rates else "",
             "No alternative reading was run at this scale (`readings: primary`): `make reproduce READINGS=all` "
             "judges them." if unjudged else "", "",
             "| claim | the paper says | verdict | why open or failed | measured | support | across readings | "
             "why (by hand) |",
             "|---|---|---|---|---|---|---|---|"]
    lines = [line for i, line in enumerate(lines) if line or not (i > 0 and lines[i - 1] == "")]
    kinds = kinds_of(ledger)
    for _, row in mine.iterrows():
        note = notes.get(row["claim_id"], {}).get("note", "")
        why = f"{row['cause']}: {reason(row)}" if row.get("cause") else ""
        if row.get("departs") and not why:
            why = str(row["departs"])
        lines.append(f"| <a id=\"{anchor(scale, row['claim_id'])}\"></a>{row['claim_id']} | "
                     f"{_cell(row.get('quote', ''), QUOTED)} | {row['status']} | {_cell(why)} | "
                     f"{_cell(row.get('measured', ''), MEASURED)} | {_cell(support_text(row))} | "
                     f"{_cell(readings_text(row))} | {_cell(note)} |")
    for kind, what in ((DERIVED, "Derived from the paper's numbers, not its sentences (outside its count)"),
                       (IMPLEMENTATION, "Implementation checks"), (REPORT, "Shown, not judged")):
        rows = ledger[kinds == kind]
        if len(rows):
            lines += ["", f"{what}: " + ", ".join(f"{r.claim_id} {r.status}" if kind != REPORT
                                                  else r.claim_id for r in rows.itertuples()) + "."]
        explained = [f"- {r.claim_id}: {_cell(notes[r.claim_id]['note'])}" for r in rows.itertuples()
                     if r.claim_id in notes]
        lines += [""] + explained if explained else []
    return lines


def expected_part(paper: str, figures: list[str], docs: Path = DOCS) -> str | None:
    """The paper's committed reference at every scale that has one (expected.py): verdicts and figures; None
    without any."""
    scales = reference_scales(paper, docs)
    if not scales:
        return None
    lines = ["### Expected results", "",
             "What this project's runs gave, committed beside this page (`fedrepro docs --from-results SCALE` takes "
             "them from a results tree). `fedrepro compare --scale SCALE` compares your results with them; "
             f"the last column is written by hand ([{paper}/{NOTES}]({paper}/{NOTES}), checked against each "
             "verdict), [docs/claims.md](../claims.md) says what the columns mean.", ""]
    notes = read_notes(paper, docs)
    stale = [line for scale in scales for line in stale_notes(paper, scale, read_reference(paper, scale, docs)[0],
                                                                notes.get(scale, {}))]
    stale += [f"docs/papers/{paper}/{NOTES}: notes at {scale}, which has no reference" for scale in notes
              if scale not in scales]
    if stale:
        raise ConfigError("notes that no longer explain their verdicts:\n  " + "\n  ".join(stale))
    for scale in scales:
        ledger, stamp = read_reference(paper, scale, docs)
        lines += verdicts_table(paper, scale, ledger, stamp, notes.get(scale)) + [""]
        shown = [f for f in [*figures, "claims"] if (reference_dir(paper, scale, docs) / f"{f}.png").is_file()]
        lines += ["<details><summary>Figures at " + f"<code>{scale}</code></summary>", ""]
        lines += [f"![{f} at {scale}]({paper}/{scale}/{f}.png)" for f in shown] + ["", "</details>", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def card_part(paper: str, claims: list[dict], titles: dict[str, str], docs: Path = DOCS) -> str | None:
    """The claim card of the paper's committed references (claim_card.py); None without any."""
    ledgers = {scale: read_reference(paper, scale, docs)[0] for scale in reference_scales(paper, docs)}
    return card(ledgers, claims, titles) if ledgers else None


def _replace(text: str, part: str, body: str | None) -> str:
    """`text` with `part` holding `body`; without a body, without the part. A new part goes at the end, but the
    card, which opens the page: after its title and first paragraph (the paper it is about)."""
    begin, end = _markers(part)
    block = f"{begin}\n{body}{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if body is None:
        return re.sub(r"\n*" + pattern.pattern + r"\n?", "\n", text, flags=re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    if part == CARD:
        head, _, rest = text.partition("\n\n")  # the title
        first, _, rest = rest.partition("\n\n")  # its first paragraph
        return f"{head}\n\n{first}\n\n{block}\n\n{rest}"
    return text.rstrip("\n") + f"\n\n{block}\n"


def current_part(text: str, part: str) -> str | None:
    begin, end = _markers(part)
    found = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, re.DOTALL)
    return found.group(1) if found else None


def hand_written(text: str) -> str:
    """A page without its generated parts: what a person wrote."""
    begin, end = (re.escape(m).replace("\\ ", " ") for m in _markers("PART"))
    return re.sub(begin.replace("PART", r"\w+") + ".*?" + end.replace("PART", r"\w+"), "", text, flags=re.DOTALL)


def run_tables(config_dir: Path = Path("config")) -> dict[str, RunTable]:
    from fedrepro.validate import load_and_validate

    return {scale: load_and_validate({"scale": scale}, config_dir)[1] for scale in SCALES}


def write_docs(papers: list[str], docs: Path = DOCS, check: bool = False, root: Path = Path(".")) -> list[str]:
    """Rewrite the generated parts of the papers' pages and of the README (its costs, from the same source as each
    page's: scale_costs.py) (with `check`, write nothing); returns the pages with a part that was not current."""
    tables = run_tables(root / "config")
    costs = scale_costs(tables["paper"].runs, root)
    stale = []
    pages = {docs / f"{paper}.md": paper for paper in papers}
    readme = root / "README.md"
    for page, paper in [*pages.items(), *([(readme, None)] if readme.is_file() else [])]:
        if not page.is_file():
            raise ConfigError(f"{page} does not exist: a paper's page is written by hand, its generated parts added")
        text = page.read_text()
        if paper is None:
            parts = {COSTS: readme_part(costs, root)}
        else:
            figures = tables["paper"].paper_figures(paper)
            claims = read_yaml(root / "config" / "claims" / f"{paper}.yaml")["claims"]
            parts = {CARD: card_part(paper, claims, {f.name: f.title for f in figures}, docs),
                     COSTS: page_part(paper, costs),
                     "figures": figures_part(paper, tables),
                     "expected": expected_part(paper, [f.name for f in figures], docs)}
        if any(current_part(text, part) != body for part, body in parts.items()):
            stale.append(str(page))
        if check:
            continue
        for part, body in parts.items():
            text = _replace(text, part, body)
        page.write_text(text)
    return stale
