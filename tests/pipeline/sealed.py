"""A ledger written by a test as rule claims leaves it: with the record beside it that every reader checks."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from fedrepro.claims.seal import ledger_record, ledger_seal
from fedrepro.claims.sequential import Look


def seal(ledger: Path, look: Look = Look()) -> Path:
    """Write the ledger's record (its verdicts, sha256 and row digests: claims/seal.py; the seed plan's `look`) as
    rule claims does."""
    rows = pd.read_csv(ledger, dtype=str, keep_default_na=False)
    claims = [{"claim_id": c, "status": s} for c, s in zip(rows["claim_id"], rows["status"])]
    ledger_record(ledger).write_text(json.dumps({"claims": claims, "ledger": ledger_seal(ledger)} | look.record()))
    return ledger
