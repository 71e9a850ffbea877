"""A scale study: which reduced-scale choice moves which claim's verdict.

config/studies/<name>.yaml names a paper, the scale its variants start from, the figures (as a scale's
figure overrides: kept panels, grid), the claims to judge and the variants: settings laid over the
scale's defaults. Optional `defaults` (settings of every variant) and `panels` (settings of named panels)
pin what the study holds fixed, so later changes to the scale itself do not change the study's runs.
Each variant is the paper's configuration with those settings, resolved by the run table like any scale,
so its runs, figure tables and claims are the pipeline's own (execute_run, figure_table,
evaluate_claims). Runs are stored by run id under results/<scale>/studies/<name>/runs, so variants
that share a run train it once and a rerun of the study trains only what is missing; each variant's
figure tables are in results/<scale>/studies/<name>/tables/<variant>/.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd

from fedrepro.claims.ledger import evaluate_claims, load_claims
from fedrepro.engines import ENGINES
from fedrepro.errors import ConfigError
from fedrepro.experiments.batch import train_missing
from fedrepro.experiments.runtable import RunTable, label_values, load_paper_config, resolve_paper
from fedrepro.layout import Layout
from fedrepro.results.tables import read_figure_table, write_figure_table
from fedrepro.schemas import check
from fedrepro.utils import atomic
from fedrepro.utils.patch import patched
from fedrepro.utils.yaml_file import read_yaml

STUDY_KEYS = {"paper", "scale", "figures", "claims", "variants", "about", "defaults", "panels"}
COLUMNS = ["variant", "claim_id", "figure", "status", "measured", "margin", "support", "settings"]


def load_study(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"no study {path}")
    study = read_yaml(path)
    missing, unknown = {"paper", "scale", "figures", "claims", "variants"} - set(study), set(study) - STUDY_KEYS
    problems = [f"{what} {', '.join(sorted(keys))}" for what, keys in (("missing", missing), ("unknown", unknown)) if keys]
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    if not study["variants"]:
        raise ConfigError(f"{path}: variants is empty")
    return study


def variant_config(paper_cfg: dict[str, Any], scale: str, settings: dict[str, Any],
                   figures: dict[str, Any], panels: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The paper's configuration whose `scale` carries the variant's settings (and settings of named
    `panels`), laid over it as a reading's alternative is (utils/patch.py), and runs only `figures`."""
    cfg = patched(paper_cfg, {"scales": {scale: {"defaults": settings, "panels": panels or {}}}})
    cfg["scales"][scale]["figures"] = copy.deepcopy(figures)
    cfg["figures"] = {name: fig for name, fig in cfg["figures"].items() if name in figures}
    return cfg


def run_study(name: str, config_dir: Path = Path("config"), out_dir: Path | None = None,
              jobs: int = 2) -> pd.DataFrame:
    """Train what the study's variants need, judge its claims per variant, write <out>/<name>.csv and .md (default
    out: results/<scale>/studies, in the tree of the study's scale)."""
    study = load_study(config_dir / "studies" / f"{name}.yaml")
    paper, scale = study["paper"], study["scale"]
    out_dir = out_dir or Layout(scale).results / "studies"
    paper_cfg = load_paper_config(config_dir / "papers" / f"{paper}.yaml")
    readings = paper_cfg.get("readings", {})
    claims_cfg = load_claims(config_dir / "claims" / f"{paper}.yaml", label_values(paper_cfg), readings)
    by_id = {c["id"]: c for c in claims_cfg["claims"]}
    unknown = [c for c in study["claims"] if c not in by_id]
    if unknown:
        raise ConfigError(f"study {name}: unknown claims {unknown} of {paper}")
    chosen = {**claims_cfg, "claims": [by_id[c] for c in study["claims"]]}
    results_dir = out_dir / name
    variants = {}
    for variant, settings in study["variants"].items():
        settings = {**study.get("defaults", {}), **(settings or {})}
        runs, figures = resolve_paper(
            variant_config(paper_cfg, scale, settings, study["figures"], study.get("panels")), scale)
        for rid, spec in runs.items():
            check(spec, ENGINES[spec["engine"]].schema, f"study {name}, variant {variant}")
        variants[variant] = (settings, RunTable(scale, runs, figures), figures)

    runs = {rid: spec for _, table, _ in variants.values() for rid, spec in table.runs.items()}
    train_missing(RunTable(scale, runs, {}), results_dir, jobs, f"study {name}")

    rows = []
    for variant, (settings, _, figures) in variants.items():
        tables = {}
        for fig in figures.values():  # the claims read a table as the pipeline does: from its CSV file
            path = results_dir / "tables" / variant / f"{fig.name}.csv"
            write_figure_table(fig, results_dir, path)
            tables[fig.name] = read_figure_table(path)
        labels = {fig.name: fig.label_columns for fig in figures.values()}
        ledger = evaluate_claims(chosen, tables, scale, labels, readings)
        ledger = ledger.assign(variant=variant, settings=", ".join(f"{k}={v}" for k, v in settings.items()))
        rows.append(ledger[COLUMNS])
    result = pd.concat(rows, ignore_index=True)
    atomic.write_text(out_dir / f"{name}.csv", result.to_csv(index=False))
    atomic.write_text(out_dir / f"{name}.md", markdown(result, study))
    return result


def markdown(result: pd.DataFrame, study: dict[str, Any]) -> str:
    """The study as a reader scans it: per claim, each variant's measured values and verdict."""
    lines = [f"# Scale study: {study['paper']} ({study['scale']} scale with each variant's settings)", ""]
    if study.get("about"):
        lines += [study["about"].strip(), ""]
    lines += ["| variant | settings |", "|---|---|"]
    lines += [f"| {v} | {', '.join(f'{k} = {x}' for k, x in (s or {}).items())} |" for v, s in study["variants"].items()]
    lines += ["", "| claim | variant | verdict | measured | margin |", "|---|---|---|---|---|"]
    for claim in study["claims"]:
        for row in result[result["claim_id"] == claim].itertuples():
            lines.append(f"| {claim} | {row.variant} | {row.status} | {row.measured} | {row.margin} |")
    summary = result.groupby("variant", sort=False)["status"].value_counts().unstack(fill_value=0)
    lines += ["", "| variant | " + " | ".join(summary.columns) + " |", "|---" * (len(summary.columns) + 1) + "|"]
    lines += [f"| {v} | " + " | ".join(str(n) for n in counts) + " |" for v, counts in summary.iterrows()]
    return "\n".join(lines) + "\n"
