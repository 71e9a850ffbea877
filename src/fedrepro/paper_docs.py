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

from fedrepro.claims.kinds import IMPLEMENTATION, PAPER, REPORT, counts_text, kinds_of
from fedrepro.claims.robustness import row_text
from fedrepro.expected import DOCS, read_reference, reference_dir, reference_scales, stamp_text
from fedrepro.errors import ConfigError
from fedrepro.schemas import SCALES
from fedrepro.experiments.runtable import RunTable
from fedrepro.verdicts import FAIL, PASS, VERDICTS

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
    of bootstrap resamples that agree; then the error rate its rule states."""
    p_pass, p_fail = row.get("p_pass", ""), row.get("p_fail", "")
    if p_pass or p_fail:
        shown = {PASS: [("p_pass", p_pass)], FAIL: [("p_fail", p_fail)]}.get(
            row["status"], [("p_pass", p_pass), ("p_fail", p_fail)])
        support = ", ".join(f"{name} {float(p):.2g}" for name, p in shown if p)
    elif row.get("support", ""):
        support = f"{float(row['support']):.0%} of resamples"
    else:
        support = ""
    return "; ".join(t for t in (support, row.get("error_rate", "")) if t)


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
    lines = [f"#### At `{scale}`", "",
             f"{counts_text(ledger)}. From [{folder}/ledger.csv]({folder}/ledger.csv), {stamp_text(stamp)}.", "",
             "| claim | the paper says | verdict | measured | support | cause | across readings | why (by hand) |",
             "|---|---|---|---|---|---|---|---|"]
    kinds = kinds_of(ledger)
    for _, row in ledger[kinds == PAPER].iterrows():
        note = notes.get(row["claim_id"], {}).get("note", "")
        lines.append(f"| {row['claim_id']} | {_cell(row.get('quote', ''), QUOTED)} | {row['status']} | "
                     f"{_cell(row.get('measured', ''), MEASURED)} | {_cell(support_text(row))} | "
                     f"{_cell(row.get('cause', ''))} | {_cell(row_text(row))} | {_cell(note)} |")
    for kind, what in ((IMPLEMENTATION, "Implementation checks"), (REPORT, "Shown, not judged")):
        rows = ledger[kinds == kind]
        if len(rows):
            lines += ["", f"{what}: " + ", ".join(f"{r.claim_id} {r.status}" if kind == IMPLEMENTATION
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


def _replace(text: str, part: str, body: str | None) -> str:
    """`text` with `part` holding `body`; without a body, without the part."""
    begin, end = _markers(part)
    block = f"{begin}\n{body}{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if body is None:
        return re.sub(r"\n*" + pattern.pattern + r"\n?", "\n", text, flags=re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
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
    """Rewrite the generated parts of the papers' pages (with `check`, write nothing); returns the pages with a
    part that was not current."""
    tables = run_tables(root / "config")
    stale = []
    for paper in papers:
        page = docs / f"{paper}.md"
        if not page.is_file():
            raise ConfigError(f"{page} does not exist: a paper's page is written by hand, its generated parts added")
        text = page.read_text()
        parts = {"figures": figures_part(paper, tables),
                 "expected": expected_part(paper, [f.name for f in tables["paper"].paper_figures(paper)], docs)}
        if any(current_part(text, part) != body for part, body in parts.items()):
            stale.append(str(page))
        if check:
            continue
        for part, body in parts.items():
            text = _replace(text, part, body)
        page.write_text(text)
    return stale
