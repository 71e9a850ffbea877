"""The claims ledger: config/claims/<paper>.yaml + figure tables -> results/claims/<paper>.csv."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from fedrepro.claims.checks import CHECKS, INCONCLUSIVE, check_choices, check_parameters
from fedrepro.claims.data import ClaimData
from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import Figure
from fedrepro.results.tables import merged_labels, read_figure_table
from fedrepro.utils.atomic import atomic_path

COLUMNS = ["claim_id", "figure", "scale", "status", "measured", "expected", "note", "quote"]
# keys of a claim entry that are not parameters of its check
CLAIM_FIELDS = {"id", "quote", "figures", "check", "expected", "note", "min_seeds"}
# top-level keys of a claims file (each check names its own metric, x column and window)
LEDGER_FIELDS = {"paper", "claims"}


def validate_claims(claims_cfg: Any, source: str, figures: set[str] | None = None) -> None:
    """Stop on a claims file that would be judged wrongly: an unknown key, check or figure, a
    missing or misspelt check parameter (a silently ignored one would change the verdict), a
    repeated id."""
    if not isinstance(claims_cfg, dict) or not isinstance(claims_cfg.get("claims"), list):
        raise ConfigError(f"{source}: expected a mapping with a list under 'claims'")
    problems = [f"unknown key {k!r}; allowed keys: {', '.join(sorted(LEDGER_FIELDS))}"
                for k in sorted(set(claims_cfg) - LEDGER_FIELDS)]
    seen: set[str] = set()
    for i, claim in enumerate(claims_cfg["claims"]):
        where = f"claims[{i}] ({claim.get('id', 'no id')})" if isinstance(claim, dict) else f"claims[{i}]"
        if not isinstance(claim, dict) or "id" not in claim or "check" not in claim:
            problems.append(f"{where}: needs at least 'id' and 'check'")
            continue
        if claim["id"] in seen:
            problems.append(f"{where}: id {claim['id']!r} is used twice")
        seen.add(claim["id"])
        if claim["check"] not in CHECKS:
            problems.append(f"{where}: unknown check {claim['check']!r}; allowed checks: {', '.join(sorted(CHECKS))}")
            continue
        required, optional = check_parameters(claim["check"])
        given = set(claim) - CLAIM_FIELDS
        for key in sorted(given - required - optional):
            problems.append(f"{where}: {key!r} is not a parameter of check {claim['check']!r}; allowed: "
                            f"{', '.join(sorted(required | optional | CLAIM_FIELDS))}")
        for key in sorted(required - given):
            problems.append(f"{where}: check {claim['check']!r} needs {key!r}")
        for key, allowed in check_choices(claim["check"]).items():
            if key in claim and claim[key] not in allowed:
                problems.append(f"{where}: {key} {claim[key]!r} is not allowed; allowed values: "
                                f"{', '.join(map(str, allowed))}")
        if figures is not None:
            for figure in sorted(set(claim.get("figures", [])) - figures):
                problems.append(f"{where}: unknown figure {figure!r}; figures of this paper: {', '.join(sorted(figures))}")
    if problems:
        raise ConfigError(f"invalid claims in {source}:\n" + "\n".join(f"  - {p}" for p in problems))


def evaluate_claims(claims_cfg: dict[str, Any], tables: dict[str, pd.DataFrame], scale: str,
                    labels: dict[str, list[str]]) -> pd.DataFrame:
    """The ledger of the claims on the figure `tables`, whose label columns are `labels` (by figure
    name, Figure.label_columns)."""
    rows = []
    # many claims read the same figures: one ClaimData per set, whose summaries are computed once
    merged: dict[tuple[str, ...], ClaimData] = {}

    def data_of(figures: list[str]) -> ClaimData:
        key = tuple(figures)
        if key not in merged:
            table = pd.concat([tables[f] for f in figures], ignore_index=True) if figures else pd.DataFrame()
            merged[key] = ClaimData(table, merged_labels(*(labels[f] for f in figures)))
        return merged[key]

    for claim in claims_cfg["claims"]:
        figures = [f for f in claim.get("figures", []) if f in tables]
        params = {k: v for k, v in claim.items() if k not in CLAIM_FIELDS}
        note = claim.get("note", "")
        if claim.get("figures") and not figures:
            status, measured, extra = INCONCLUSIVE, "", f"figures {claim['figures']} not produced at scale {scale}"
        else:
            data = data_of(figures)
            status, measured, extra = CHECKS[claim["check"]](data, **params)
            seeds = data.seeds()
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


def load_claims(path: Path, figures: set[str] | None = None) -> dict[str, Any]:
    """A claims file, checked by validate_claims (figure names too when `figures` is given)."""
    with open(path) as fh:
        claims_cfg = yaml.safe_load(fh)
    validate_claims(claims_cfg, str(path), figures)
    return claims_cfg


def write_ledger(claims_path: Path, table_paths: list[Path], figures: list[Figure], scale: str,
                 out: Path) -> pd.DataFrame:
    """The ledger of one paper: its claims file, its figure tables and the figures they belong to
    (for their label columns)."""
    claims_cfg = load_claims(claims_path)
    tables = {p.stem: read_figure_table(p) for p in table_paths}
    labels = {f.name: f.label_columns for f in figures}
    ledger = evaluate_claims(claims_cfg, tables, scale, labels)
    with atomic_path(out, suffix=".csv") as tmp:
        ledger.to_csv(tmp, index=False)
    return ledger
