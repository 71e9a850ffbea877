"""What kind of statement a claim is (docs/claims.md, "Kinds of claim"), declared by `kind` in
config/claims/<paper>.yaml, and the verdict counts that follow from it: only the paper's claims count
towards a paper's totals (the report's front page, `fedrepro list`, the generated docs, the ledger's
record); implementation checks have their own line, and a failed one stops the ledger (ledger.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from fedrepro.claims.checks import REPORTING
from fedrepro.verdicts import VERDICTS

PAPER, DERIVED, IMPLEMENTATION, REPORT = "paper", "derived", "implementation", "report"
KINDS = {
    PAPER: "what the paper asserts: its verdicts are the paper's count",
    DERIVED: "our inference from the paper's numbers (a pattern of its table), not a sentence of the paper: judged, "
             "outside the paper's count",
    IMPLEMENTATION: "true by construction (a count fixed by the settings, an invariant of the simulator, a "
                    "property of the data): a check of our implementation, outside the paper's count; a FAIL stops "
                    "the ledger",
    REPORT: f"shown, not judged (checks {', '.join(sorted(REPORTING))}): outside every count",
}


def kind_of(claim: dict[str, Any]) -> str:
    """A claim's kind: `kind` in its claims file, `paper` where it declares none."""
    return claim.get("kind", PAPER)


def kind_problems(claim: dict[str, Any]) -> list[str]:
    """What is wrong with a claim's `kind` (claims/validation.py): an unknown kind, or a check that shows without
    judging (checks.REPORTING) in a claim that is not a report, or the reverse."""
    kind = kind_of(claim)
    if kind not in KINDS:
        return [f"kind: {kind!r} is not a kind of claim; allowed: {', '.join(KINDS)}"]
    if (kind == REPORT) != (claim["check"] in REPORTING):
        return [f"kind: {kind!r} with check {claim['check']!r}: a check that only shows ({', '.join(sorted(REPORTING))}) "
                f"is kind {REPORT!r}, and a claim of kind {REPORT!r} takes one of them"]
    return []


def kinds_of(ledger: pd.DataFrame) -> pd.Series:
    """Each row's kind (a ledger written before kinds: every row the paper's)."""
    if "kind" not in ledger:
        return pd.Series(PAPER, index=ledger.index)
    return ledger["kind"].astype("string").fillna(PAPER).replace("", PAPER)


def verdict_counts(ledger: pd.DataFrame, kind: str = PAPER) -> Counter:
    """PASS / FAIL / INCONCLUSIVE of the rows of one kind."""
    return Counter(ledger.loc[kinds_of(ledger) == kind, "status"])


def counts_text(ledger: pd.DataFrame) -> str:
    """"8 PASS, 7 FAIL, 2 INCONCLUSIVE of 17 paper claims; derived from its numbers: 1 PASS; implementation checks:
    4 PASS; 5 reported": the paper's claims first, the other kinds on their own."""
    paper = verdict_counts(ledger)
    text = (", ".join(f"{paper.get(v, 0)} {v}" for v in VERDICTS)
            + f" of {sum(paper.values())} paper claim{'' if sum(paper.values()) == 1 else 's'}")
    derived = verdict_counts(ledger, DERIVED)
    if derived:
        text += "; derived from its numbers: " + ", ".join(f"{n} {v}" for v in VERDICTS if (n := derived.get(v)))
    implementation = verdict_counts(ledger, IMPLEMENTATION)
    if implementation:
        text += "; implementation checks: " + ", ".join(f"{n} {v}" for v in VERDICTS if (n := implementation.get(v)))
    reported = int((kinds_of(ledger) == REPORT).sum())
    if reported:
        text += f"; {reported} reported, not judged"
    return text
