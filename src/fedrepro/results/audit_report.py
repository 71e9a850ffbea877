"""An audit (results/audit.py) as a Markdown report per paper and a one-screen summary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from fedrepro.results.audit import (FAIL, MISSING, OK, UNVERIFIED, WARN, Checkout, Finding, PaperAudit, status_of,
                                   worst)
from fedrepro.training_code import BEFORE_CODE_HASH, OTHER_CODE
from fedrepro.utils import atomic
from fedrepro.verdicts import VERDICTS

FIGURE_CHECKS = ("table", "files", "DVC")
RUN_CHECKS = ("run.json", "metrics.csv", "data", "code", "code hash", "packages", "DVC", "rerun")
LEGEND = ("FAIL: what is on disk contradicts a record (a hash differs, run.json is broken); UNVERIFIED: a run drawn "
          "for a rerun that could not be recomputed here (saying why); MISSING: never produced; WARN: a difference "
          "that contradicts no record (another commit or package version, a run trained by other code, data not "
          "here to check, not yet recorded by DVC); OK: as recorded.")
MISSING_NOUNS = {"run.json": "runs", "table": "figure tables", "files": "figures", "claims": "claims ledgers"}
SUMMARY_LINES = 12  # findings listed on screen; the rest are in the report


def _counts(statuses: list[str], order: tuple[str, ...] = (OK, WARN, MISSING, UNVERIFIED, FAIL)) -> str:
    counts = Counter(statuses)
    return ", ".join(f"{counts[s]} {s}" for s in order if counts[s]) or "none"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows])


def _listed(findings: list[Finding]) -> list[str]:
    return [f"- **{f.status}** {f.check}: {f.detail}" for f in findings]


def code_hash_line(audits: list[PaperAudit]) -> str | None:
    """How many runs were trained by other code than this fedrepro's, and how many predate the code hash."""
    details = [f.detail for a in audits for run in a.runs.values() for f in run.findings if f.check == "code hash"]
    other, before = (sum(d.startswith(kind) for d in details) for kind in (OTHER_CODE, BEFORE_CODE_HASH))
    if not other and not before:
        return None
    return (f"code hash: of {len(details)} run(s), {other} {OTHER_CODE}, {before} recorded before the code hash "
            f"(`snakemake --forcerun $(fedrepro stale-runs)` retrains them)")


def render(audit: PaperAudit, checkout: Checkout) -> str:
    """The Markdown report of one paper."""
    findings = audit.all_findings
    git = checkout.git
    code = (f"commit {git['commit'][:12]}{' with uncommitted changes' if git.get('dirty') else ', clean'}"
            if git.get("commit") else "not a git checkout")
    lines = [
        f"# Audit of `{audit.paper}` at scale `{audit.scale}`",
        "",
        f"Scale {audit.scale_from}. This checkout: {code}.",
        "",
        f"**Result: {worst(findings)}.** Runs: {_counts([r.status for r in audit.runs.values()])}; figures: "
        f"{_counts([worst(f.findings) for f in audit.figures])}.",
        "",
        *([f"{code}.", ""] if (code := code_hash_line([audit])) else []),
        LEGEND,
        "",
    ]
    lines += _listed(audit.findings) + [""]
    for status, title in ((FAIL, "Mismatches"), (UNVERIFIED, "Not verified"), (MISSING, "Missing")):
        chosen = [f for f in findings if f.status == status]
        if chosen:
            lines += [f"## {title}", ""] + _listed(chosen) + [""]
    lines += ["## Figures", ""]
    lines += _table(["figure", "title", "table", "files", "DVC", "runs"],
                    [[f.name, f.title, *(status_of(f.findings, c) for c in FIGURE_CHECKS),
                      f"{len(f.run_ids)}: {_counts([audit.runs[r].status for r in f.run_ids])}"]
                     for f in audit.figures])
    lines += ["", "## Runs", ""]
    lines += _table(["run", "behind", *RUN_CHECKS],
                    [[f"`{run.run_id}`", "; ".join(run.curves), *(run.status_of(c) for c in RUN_CHECKS)]
                     for run in audit.runs.values()])
    lines += ["", "### Each run", ""]
    for run in audit.runs.values():
        lines += [f"#### `{run.run_id}`: {run.status}", ""] + _listed(run.findings) + [""]
    if audit.claims is not None:
        lines += ["## Claims", ""]
        lines += _table(["claim", "figure", "status", "support", "note"],
                        audit.claims[["claim_id", "figure", "status", "support", "note"]].values.tolist())
        lines.append("")
    return "\n".join(lines)


def summary(audits: list[PaperAudit], reports: dict[tuple[str, str], str]) -> str:
    """One line per paper and scale (`reports`: (scale, paper) -> its report), then the first failures and missing
    outputs (the reports have them all)."""
    lines = []
    for audit in audits:
        findings = audit.all_findings
        claims = "no ledger" if audit.claims is None else _counts(audit.claims["status"].tolist(), VERDICTS)
        lines.append(f"{audit.paper} (scale {audit.scale}): {worst(findings)}; runs "
                     f"{_counts([r.status for r in audit.runs.values()])}; claims: {claims} -> {reports[(audit.scale, audit.paper)]}")
    shown = [f"  {f.status} {f.detail}" for a in audits for f in a.all_findings if f.status == FAIL]
    missing = Counter(MISSING_NOUNS.get(f.check, f.check) for a in audits for f in a.all_findings
                      if f.status == MISSING)
    notes = sorted({f.detail for a in audits for f in a.findings if f.status == WARN})
    lines += shown[:SUMMARY_LINES]
    if len(shown) > SUMMARY_LINES:
        lines.append(f"  ... {len(shown) - SUMMARY_LINES} more mismatches in the reports")
    unverified = [f for a in audits for f in a.all_findings if f.status == UNVERIFIED]
    if unverified:
        lines.append(f"  UNVERIFIED: {len(unverified)} run(s) drawn for a rerun could not be recomputed here (each "
                     f"says why: see above and the reports)")
    if missing:
        lines.append("  MISSING: " + ", ".join(f"{n} {what}" for what, n in sorted(missing.items()))
                     + " (never produced: `snakemake` makes them)")
    warned = Counter(f.check for a in audits for run in a.runs.values() for f in run.findings if f.status == WARN)
    if warned:
        lines.append("  WARN: " + ", ".join(f"{check} in {n} run(s)" for check, n in sorted(warned.items()))
                     + " (differences that contradict no record: see the reports)")
    code = code_hash_line(audits)
    if code:
        lines.append(f"  {code}")
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines)


HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body {{font-family: sans-serif; max-width: 80em; margin: 1em auto; line-height: 1.4}}
table {{border-collapse: collapse; font-size: 90%}} td, th {{border: 1px solid #ccc; padding: 2px 6px}}
code {{font-size: 95%}}</style></head>
<body>
{body}</body></html>
"""


def write_report(audit: PaperAudit, checkout: Checkout, markdown: Path) -> None:
    """The report as Markdown at `markdown` and as HTML beside it (.html, for a browser and Snakemake's report)."""
    from markdown_it import MarkdownIt

    text = render(audit, checkout)
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    atomic.write_text(markdown, text)
    atomic.write_text(markdown.with_suffix(".html"), HTML.format(title=f"Audit of {audit.paper}", body=body))
