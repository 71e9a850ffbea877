"""The ledger names the synthetic stand-ins its claims were judged on (TDCD: MIMIC-III and ModelNet40 are
user-provided; without them the runs read stand-ins, data/sources.py). The runs' `data_source` setting is a
column of each figure table; a claim on a figure whose runs read a stand-in gets "Data: <label>." in its
note, so a verdict on synthetic data never reads as one on the paper's data."""

from __future__ import annotations

import pandas as pd

from fedrepro.data.sources import STAND_INS

STAND_IN_LABELS = {s.label for s in STAND_INS.values()}


def stand_ins_of(table: pd.DataFrame) -> list[str]:
    """The stand-in labels among a figure table's data sources, in order."""
    if "data_source" not in table:
        return []
    return [label for label in dict.fromkeys(table["data_source"].dropna()) if label in STAND_IN_LABELS]


def stand_ins(figures: list[str], tables: dict[str, pd.DataFrame]) -> list[str]:
    """The stand-in labels of the figures a claim reads (those among `tables`), in order."""
    return list(dict.fromkeys(label for f in figures if f in tables for label in stand_ins_of(tables[f])))


def with_data_notes(ledger: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The ledger with "Data: <stand-in labels>." appended to the note of every claim on such figures."""
    ledger = ledger.copy()
    for i, figures in ledger["figure"].fillna("").items():
        labels = stand_ins(str(figures).split(), tables)
        if labels:
            note = "" if pd.isna(ledger.at[i, "note"]) else str(ledger.at[i, "note"]).strip()
            if note and not note.endswith("."):
                note += "."
            ledger.at[i, "note"] = " ".join(x for x in (note, f"Data: {'; '.join(labels)}.") if x)
    return ledger
