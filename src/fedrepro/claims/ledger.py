"""The claims ledger: config/claims/<paper>.yaml + figure tables -> results/claims/<paper>.csv."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from fedrepro.claims.checks import CHECKS, INCONCLUSIVE, NEEDS_TABLE
from fedrepro.claims.summaries import curve_medians
from fedrepro.utils.atomic import atomic_path

COLUMNS = ["claim_id", "figure", "scale", "status", "measured", "expected", "note", "quote"]
# keys of a claim entry that are not parameters of its check
CLAIM_FIELDS = {"id", "quote", "figures", "check", "expected", "note", "min_seeds"}


def evaluate_claims(claims_cfg: dict[str, Any], tables: dict[str, pd.DataFrame], scale: str) -> pd.DataFrame:
    metric = claims_cfg.get("metric", "grad_norm")
    window = claims_cfg.get("final_window", 0.1)
    eps = claims_cfg.get("eps", [0.1, 0.01, 0.001])
    rows = []
    # many claims read the same figures: build each set's table and per-run medians once
    merged: dict[tuple[str, ...], tuple[pd.DataFrame, pd.DataFrame]] = {}

    def table_and_curves(figures: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        key = tuple(figures)
        if key not in merged:
            table = pd.concat([tables[f] for f in figures], ignore_index=True) if figures else pd.DataFrame()
            merged[key] = table, (curve_medians(table, metric, window, eps) if figures else pd.DataFrame())
        return merged[key]

    for claim in claims_cfg["claims"]:
        figures = [f for f in claim.get("figures", []) if f in tables]
        params = {k: v for k, v in claim.items() if k not in CLAIM_FIELDS}
        note = claim.get("note", "")
        if claim.get("figures") and not figures:
            status, measured, extra = INCONCLUSIVE, "", f"figures {claim['figures']} not produced at scale {scale}"
        else:
            table, curves = table_and_curves(figures)
            if claim["check"] in NEEDS_TABLE:
                params["table"] = table
            status, measured, extra = CHECKS[claim["check"]](curves, **params)
            seeds = int(curves["seeds"].min()) if len(curves) else 0
            if status != INCONCLUSIVE and seeds < claim.get("min_seeds", 1):
                status, extra = INCONCLUSIVE, (
                    f"only {seeds} seed(s) at this scale; the claim needs >= {claim['min_seeds']} to be judged "
                    f"(result shown for information). {extra}"
                )
        rows.append({
            "claim_id": claim["id"], "figure": " ".join(figures or claim.get("figures", [])), "scale": scale,
            "status": status, "measured": measured, "expected": claim.get("expected", ""),
            "note": " ".join(x for x in (extra, note) if x).strip(), "quote": claim.get("quote", ""),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def write_ledger(claims_path: Path, table_paths: list[Path], scale: str, out: Path) -> pd.DataFrame:
    with open(claims_path) as fh:
        claims_cfg = yaml.safe_load(fh)
    tables = {p.stem: pd.read_csv(p) for p in table_paths}
    ledger = evaluate_claims(claims_cfg, tables, scale)
    with atomic_path(out, suffix=".csv") as tmp:
        ledger.to_csv(tmp, index=False)
    return ledger
