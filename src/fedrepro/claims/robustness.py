"""A verdict under the alternative readings it rests on, as data (docs/claims_reference.md, "Robust or depends"): the
ledger's `robustness` column holds the category (robust, depends, untested, or empty for a claim that rests on
no reading) and `alternatives` each alternative judged or not, as JSON (reading, alternative, verdict, whether
it flips the check's own verdict, and why it was not judged). The text a reader sees is rendered from them
(`text`); the report, the claims figure and the audit read the fields."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

ROBUST, DEPENDS, UNTESTED = "robust", "depends", "untested"
CATEGORIES = (ROBUST, DEPENDS, UNTESTED)
# what each category tells a reader (the report's front page and the ledger's table explain the column with it)
MEANING = {ROBUST: "the same verdict under every alternative reading judged",
           DEPENDS: "an alternative reading flips the verdict",
           UNTESTED: "no alternative reading was judged (or one that changes the runs was not run: readings: primary)"}
# why an alternative was not judged: code -> what the text says
WHY_UNTESTED = {
    "not_run": "not run",  # declared without `set` or `check`: nothing to run
    "no_run_changed": "changes none of its runs",  # at this scale its patch leaves the claim's runs alone
    "no_check_change": "changes nothing in its check",  # a reading of the check whose parameters it does not take
    "not_evaluated": "not evaluated: config readings: primary",  # runs an alternative needs were not trained
    "too_few_seeds": "too few seeds for the rule",  # its runs have fewer seeds than the rule decides on
}
NOT_EVALUATED, TOO_FEW_SEEDS = "not_evaluated", "too_few_seeds"
# the untested codes that leave a FAIL short of the paper's (causes.cause `unjudged`): the alternative could have
# given another verdict and was not judged. The others cannot: it leaves the claim's runs or check as judged, or
# its runs have too few seeds for the rule to decide anything (the paper's single seed), so it cannot overturn one.
OPEN_QUESTIONS = ("not_run", NOT_EVALUATED)


@dataclass(frozen=True)
class Alternative:
    """One alternative of a reading a claim rests on: the check's verdict under it, whether that differs from
    the verdict under the primary readings (`flips`), or why it was not judged (`untested`, a WHY_UNTESTED
    code; then no verdict)."""
    reading: str
    alternative: str
    verdict: str | None = None
    flips: bool = False
    untested: str | None = None

    @property
    def name(self) -> str:
        return f"{self.reading}={self.alternative}"


def category(alternatives: list[Alternative], rests: bool) -> str:
    """robust: the verdict is the same under every alternative that could be judged, and each was; depends:
    some alternative flips it; untested: none was judged, or one that changes runs was not evaluated; "" for a
    claim that rests on no reading."""
    if not rests:
        return ""
    judged = [a for a in alternatives if a.verdict is not None]
    if any(a.flips for a in judged):
        return DEPENDS
    if not judged or any(a.untested == NOT_EVALUATED for a in alternatives):
        return UNTESTED
    return ROBUST


def unjudged(alternatives: list[Alternative]) -> list[Alternative]:
    """The alternatives that were not judged and could have changed the verdict (OPEN_QUESTIONS)."""
    return [a for a in alternatives if a.untested in OPEN_QUESTIONS]


def text(kind: str, alternatives: list[Alternative]) -> str:
    """The robustness a reader reads, from the fields: "robust (r=a: PASS)", "depends (r=a: FAIL; untested:
    r=b (not run))", "untested (r=a (not evaluated: config readings: primary); the same under r=b: PASS)"."""
    if not kind:
        return ""
    unrun = [f"{a.name} ({WHY_UNTESTED[a.untested]})" for a in alternatives if a.verdict is None]
    judged = [a for a in alternatives if a.verdict is not None]
    untested = f"; untested: {', '.join(unrun)}" if unrun else ""
    if not judged:
        return f"{UNTESTED} ({', '.join(unrun) or 'no alternative declared'})"
    if kind == DEPENDS:
        return f"{DEPENDS} ({', '.join(f'{a.name}: {a.verdict}' for a in judged if a.flips)}{untested})"
    same = f"{', '.join(a.name for a in judged)}: {judged[0].verdict}"
    if kind == UNTESTED:
        return f"{UNTESTED} ({', '.join(unrun)}; the same under {same})"
    return f"{ROBUST} ({same}{untested})"


def encode(alternatives: list[Alternative]) -> str:
    """The ledger's `alternatives` cell: a JSON list ("" for none)."""
    return json.dumps([asdict(a) for a in alternatives], separators=(",", ":")) if alternatives else ""


def decode(cell: object) -> list[Alternative]:
    """A ledger's `alternatives` cell read back (empty, or missing: none)."""
    if not isinstance(cell, str) or not cell.strip():
        return []
    return [Alternative(**a) for a in json.loads(cell)]


def row_text(row) -> str:
    """The robustness text of a ledger row (a mapping with `robustness` and `alternatives`)."""
    kind = row.get("robustness", "")
    return text(kind if isinstance(kind, str) else "", decode(row.get("alternatives", "")))
