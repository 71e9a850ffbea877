"""The claims ledger as a readable HTML table (results/<scale>/claims/<paper>.html) for the HTML report, which
shows an HTML file in place but a CSV only as a download: one row per claim, the paper's words and our verdict
first, its verdict coloured, methods by their names, the numbers rounded, every text escaped, what each column
means above it. The table keeps its width: in the report's frame beside the menu (about 640 px) a table within the
frame's width squeezed its text columns to a character per line; it scrolls instead."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from fedrepro.claims.causes import CAUSES
from fedrepro.claims.checks.inference import ALPHA
from fedrepro.claims.kinds import KINDS, VERDICTS, counts_text
from fedrepro.claims.robustness import MEANING, row_text
from fedrepro.claims.seal import verify_ledger
from fedrepro.claims.support import DECIDE
from fedrepro.utils.atomic import write_text
from fedrepro.verdicts import VERDICTS

STATUS_COLOURS = dict(zip(VERDICTS, ("#c8e6c9", "#ffcdd2", "#e0e0e0")))
# The columns a reader reads first lead: the paper's words, our verdict and whether it rests on a reading; the
# numbers and names follow. Plain headers for the ledger's columns.
COLUMNS = {"quote": "claim (the paper's words)", "status": "verdict", "cause": "why open or failed",
           "seeds_needed": "seeds needed", "robustness": "across readings", "measured": "measured",
           "expected": "expected", "p_pass": "p pass", "p_fail": "p fail", "error_rate": "error rate",
           "equivalence_margin": "equivalence margin", "support": "support", "margin": "margin", "note": "note", "claim_id": "id", "kind": "kind",
           "figure": "figures"}
VERDICT_WORDS = dict(zip(VERDICTS, ("our results show the claim", "they show it does not hold",
                                     "they cannot decide it (column cause: why)")))
# What each column means, above the table: a reader meets p pass or margin without docs/claims.md at hand.
EXPLAINED = {
    "quote": "what the paper says, in its words",
    "status": "; ".join(f"{v}: {w}" for v, w in VERDICT_WORDS.items()),
    "cause": "of a FAIL or INCONCLUSIVE: " + "; ".join(f"{c}: {w}" for c, w in CAUSES.items()),
    "seeds_needed": "for cause seeds: the seeds at which the claim's own test would decide it, its effect and spread "
                    "held fixed (unknown: one seed has no spread, or the check does not test its seeds)",
    "robustness": "where the paper leaves a choice open and we read it one way (the reading, in the note): "
                  + "; ".join(f"{k}: {w}" for k, w in MEANING.items()),
    "measured": "what our runs give, cell by cell, the methods by their names in the figures",
    "expected": "what the claim needs, as its check reads it",
    "p_pass": f"p-value of the claim's test of the seeds that it holds: PASS when <= {ALPHA:g}",
    "p_fail": f"p-value of the test that it fails: FAIL when <= {ALPHA:g}",
    "error_rate": "the error rate the verdict's rule states: a test's, or uncalibrated for a bootstrap",
    "equivalence_margin": "of a claim that two things are the same: how far apart they may be, in the check's units",
    "support": "of a check without a test: the share of bootstrap resamples of the seeds (or Monte Carlo runs) in "
               f"which it holds; its verdict stands when >= {DECIDE:.0%} agree (empty: no bootstrap, the note says why)",
    "margin": "how far the measured value lies from the check's threshold, in the check's units (> 0: holds); in "
              "brackets, in bootstrap standard deviations",
    "note": "the rule's reasoning, the readings the claim rests on, remarks",
    "claim_id": "the claim's id (config/claims/<paper>.yaml)",
    "kind": "; ".join(f"{k}: {w}" for k, w in KINDS.items()),
    "figure": "the figures the claim is judged on (each figure's page lists its claims)",
}
LEFT_OUT = "A column empty for every claim is left out; the CSV has every column."
STYLE = """
body { font-family: sans-serif; font-size: 13px; margin: 8px; }
table { border-collapse: collapse; table-layout: fixed; width: 1380px; }
th, td { border: 1px solid #bbb; padding: 3px 6px; vertical-align: top; text-align: left; overflow-wrap: anywhere; }
th { background: #f0f0f0; position: sticky; top: 0; }
col.quote { width: 15%; } col.status { width: 9.5em; } col.cause { width: 5.5em; } col.seeds_needed { width: 5.5em; }
col.robustness { width: 10%; } col.measured { width: 22%; }
col.expected { width: 11%; } col.p_pass, col.p_fail { width: 4.5em; } col.error_rate { width: 7em; }
col.equivalence_margin { width: 7em; }
col.support { width: 5em; } col.margin { width: 6.5em; } col.note { width: 14%; }
col.claim_id { width: 3.5em; } col.figure { width: 5em; } col.kind { width: 8.5em; }
"""
LEGEND_STYLE = """dl.columns { max-width: 1380px; margin: 4px 0 8px; } dl.columns dt { font-weight: bold; float: left;
  clear: left; margin-right: 0.4em; } dl.columns dd { margin: 0 0 2px; }
"""


def plain_words(text: str, names: dict[str, str]) -> str:
    """A measured value with the methods' keys (fedavg_svrg) replaced by their names in the figures (FedAvg-SVRG)."""
    for key in sorted(names, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(key)}\b", names[key], text)
    return text


def ledger_html(ledger: pd.DataFrame, title: str, note: str = "", names: dict[str, str] | None = None) -> str:
    shown = ledger.copy()
    if "measured" in shown:
        shown["measured"] = shown["measured"].astype("string").fillna("").map(lambda t: plain_words(t, names or {}))
    if "seeds_needed" in shown:  # a count, or text ("not within reach"): as written, never "7.000000"
        shown["seeds_needed"] = [v if isinstance(v, str) else "" if pd.isna(v) else f"{v:.0f}"
                                 for v in shown["seeds_needed"]]
    if "robustness" in shown:  # the text, rendered from the fields (category and alternatives)
        shown["robustness"] = [row_text(row) for _, row in shown.iterrows()]
    if {"margin", "margin_se"} <= set(shown):  # one cell: the margin and its bootstrap standard deviations
        shown["margin"] = [("" if pd.isna(m) else f"{m:.3g}") + ("" if pd.isna(se) else f" ({se:.3g} sd)")
                           for m, se in zip(shown["margin"], shown["margin_se"])]
    # a column empty in every row (p pass where no claim is tested) is left out: the CSV has them all
    columns = [c for c in COLUMNS if c in shown and not shown[c].isna().all()
               and not shown[c].astype("string").fillna("").str.strip().eq("").all()]
    shown = shown[columns]
    styled = (shown.style.hide(axis="index")
              .format({c: f for c, f in {"support": "{:.1%}", "p_pass": "{:.2g}", "p_fail": "{:.2g}",
                                         "equivalence_margin": "±{:g}"}.items()
                       if c in shown}, escape="html", na_rep="")
              .map(lambda status: f"background-color: {STATUS_COLOURS.get(status, 'white')}", subset=["status"])
              .relabel_index([COLUMNS[c] for c in columns], axis="columns"))
    colgroup = "<colgroup>" + "".join(f'<col class="{c}">' for c in columns) + "</colgroup>"
    table = styled.to_html().replace(">\n  <thead>", f">{colgroup}\n  <thead>", 1)
    counts = counts_text(ledger)
    if "robustness" in ledger:  # robust / depends / untested across the alternative readings
        kinds = ledger["robustness"].astype("string").fillna("").loc[lambda k: k != ""]
        if len(kinds):
            counts += "; across readings: " + ", ".join(f"{n} {k}" for k, n in kinds.value_counts().items())
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}{LEGEND_STYLE}</style></head>\n<body><h3>{html.escape(title)}</h3><p>{counts}</p>\n"
            + (f"<p>{html.escape(note)}</p>\n" if note else "") +
            f"{legend(columns, LEFT_OUT)}\n{table}</body></html>\n")


def legend(columns: list[str], more: str = "") -> str:
    """What the shown columns mean (EXPLAINED), and `more`, folded under one click."""
    terms = "".join(f"<dt>{html.escape(COLUMNS[c])}:</dt><dd>{html.escape(EXPLAINED[c])}</dd>" for c in columns)
    return (f'<details><summary>What the columns mean</summary><dl class="columns">{terms}</dl>'
            + (f"<p>{html.escape(more)}</p>" if more else "") + "</details>")



def write_ledger_html(ledger_csv: Path, out: Path, paper: str, note: str = "", names: dict[str, str] | None = None
                      ) -> None:
    verify_ledger(ledger_csv)  # the ledger rule claims wrote, or none
    ledger = pd.read_csv(ledger_csv, dtype={"claim_id": str, "seeds_needed": str})
    scale = ", ".join(map(str, ledger["scale"].unique())) if "scale" in ledger else "?"
    write_text(out, ledger_html(ledger, f"Claims ledger of {paper} (scale {scale})", note, names))
