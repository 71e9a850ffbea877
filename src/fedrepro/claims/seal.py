"""What a claims ledger was when rule claims wrote it, and the check every reader of it makes first.

The ledger's JSON record (<paper>.json, claims/ledger.py write_ledger) holds the sha256 of the ledger's CSV and a
digest of each claim's row. The ledger's HTML table, the figure pages and the report's front page read a ledger
only through read_ledger, so a ledger edited by hand (a verdict flipped) stops them with one line naming the file
and the claims that changed. An edit made consistently in the CSV and its record is the audit's to find: it
recomputes both from the figure tables (results/audit.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from fedrepro.errors import ResultsError
from fedrepro.utils.digest import config_digest, file_sha256

KEY = "claim_id"


def ledger_record(ledger: Path) -> Path:
    """The JSON record beside a ledger: results/<scale>/claims/<paper>.json."""
    return ledger.with_suffix(".json")


def _rows(ledger: Path) -> pd.DataFrame:
    """The ledger's cells as the text written."""
    return pd.read_csv(ledger, dtype=str, keep_default_na=False)


def ledger_seal(ledger: Path) -> dict[str, Any]:
    """The record's `ledger` entry for a ledger file as written: its sha256 and each claim's row digest."""
    rows = _rows(ledger)
    return {"file": ledger.name, "sha256": file_sha256(ledger),
            "rows": {row[KEY]: config_digest(list(row)) for _, row in rows.iterrows()}}


def verify_ledger(ledger: Path) -> None:
    """Raise ResultsError unless the ledger is the file rule claims wrote (its record's sha256); the message names
    each claim whose row changed, with both verdicts where its verdict changed."""
    record_path = ledger_record(ledger)
    fix = (f"rebuild it (delete {ledger} and run snakemake again) or restore the recorded version with "
           f"`dvc checkout --force {ledger} {record_path}`")
    try:
        record = json.loads(record_path.read_text())
        sealed, rows = record["ledger"]["sha256"], dict(record["ledger"]["rows"])
        written = {c[KEY]: c["status"] for c in record["claims"]}
    except (OSError, ValueError, KeyError, TypeError):
        raise ResultsError(f"{record_path} records no sha256 of {ledger.name}, so {ledger} cannot be verified "
                           f"(written by an older fedrepro, or not by rule claims); {fix}") from None
    actual = file_sha256(ledger)
    if actual == sealed:
        return
    try:
        now = _rows(ledger)
        found = {row[KEY]: (config_digest(list(row)), row.get("status", "")) for _, row in now.iterrows()}
    except (ValueError, KeyError):  # no longer a table with claim ids
        found = {}
    changes = ([f"claim {c} is gone" for c in rows if c not in found]
               + [f"claim {c} was not written by rule claims" for c in found if c not in rows]
               + [f"claim {c} reads {found[c][1]}, but rule claims wrote {written.get(c)}"
                  if found[c][1] != written.get(c) else f"claim {c}'s row differs from the one rule claims wrote"
                  for c in rows if c in found and found[c][0] != rows[c]])
    what = "; ".join(changes) if found and changes else "its layout or its cells differ" if found else \
        "it is no longer a table of claims"
    raise ResultsError(f"{ledger} was changed after rule claims wrote it: {what} (sha256 {actual}, but "
                       f"{record_path.name} records {sealed}); {fix}")


def read_ledger(ledger: Path) -> pd.DataFrame:
    """A ledger's cells as text, once it is verified (verify_ledger)."""
    verify_ledger(ledger)
    return _rows(ledger)
