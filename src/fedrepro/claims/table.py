"""The claims ledger as a readable HTML table (results/claims/<paper>.html) for the HTML report, which shows
an HTML file in place but a CSV only as a download: one row per claim, its verdict coloured, the numbers
rounded, every text escaped."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from fedrepro.utils.atomic import write_text

STATUS_COLOURS = {"PASS": "#c8e6c9", "FAIL": "#ffcdd2", "INCONCLUSIVE": "#e0e0e0"}
NUMBERS = {"support": "{:.1%}", "margin": "{:.3g}", "margin_se": "{:.3g}"}
STYLE = """
body { font-family: sans-serif; font-size: 13px; margin: 8px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #bbb; padding: 3px 6px; vertical-align: top; text-align: left; }
th { background: #f0f0f0; position: sticky; top: 0; }
td { max-width: 28em; }
"""


def ledger_html(ledger: pd.DataFrame, title: str, note: str = "") -> str:
    styled = (ledger.style.hide(axis="index")
              .format({k: v for k, v in NUMBERS.items() if k in ledger}, escape="html", na_rep="")
              .map(lambda status: f"background-color: {STATUS_COLOURS.get(status, 'white')}", subset=["status"]))
    counts = ", ".join(f"{n} {status}" for status, n in ledger["status"].value_counts().items())
    if "robustness" in ledger:  # robust / depends / untested across the alternative readings
        kinds = ledger["robustness"].astype("string").fillna("").str.split(" ").str[0].loc[lambda k: k != ""]
        if len(kinds):
            counts += "; across readings: " + ", ".join(f"{n} {k}" for k, n in kinds.value_counts().items())
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body><h3>{html.escape(title)}</h3><p>{counts}</p>\n"
            + (f"<p>{html.escape(note)}</p>\n" if note else "") +
            f"{styled.to_html()}</body></html>\n")


def write_ledger_html(ledger_csv: Path, out: Path, paper: str, note: str = "") -> None:
    ledger = pd.read_csv(ledger_csv, dtype={"claim_id": str})
    scale = ", ".join(map(str, ledger["scale"].unique())) if "scale" in ledger else "?"
    write_text(out, ledger_html(ledger, f"Claims ledger of {paper} (scale {scale})", note))
