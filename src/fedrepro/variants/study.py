"""A scale study: which reduced-scale choice moves which claim's verdict. Its variants file (variants/spec.py)
names the variants, each a patch over the paper's configuration, and the claims to judge under each. Each
variant's runs, figure tables and claims are the pipeline's own (execute_run, figure_table, evaluate_claims); its
figure tables are in results/<scale>/variants/<name>/tables/<variant>/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from fedrepro.claims.ledger import evaluate_claims, load_claims
from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import label_values, load_paper_config, raw_data_root, resolve_paper
from fedrepro.results.tables import read_figure_table, write_figure_table
from fedrepro.utils.patch import patched
from fedrepro.variants.spec import base_config, settings_text, train_checked, write_result

COLUMNS = ["variant", "claim_id", "figure", "status", "measured", "margin", "support", "settings"]


def run_study(spec: dict[str, Any], config_dir: Path = Path("config"), out_dir: Path | None = None,
              jobs: int = 2) -> pd.DataFrame:
    """Train what the study's variants need, judge its claims per variant, write the result (variants/spec.py)."""
    paper, scale = spec["paper"], spec["scale"]
    paper_cfg = load_paper_config(config_dir / "papers" / f"{paper}.yaml")
    readings = paper_cfg.get("readings", {})
    claims_cfg = load_claims(config_dir / "claims" / f"{paper}.yaml",
                             label_values(*resolve_paper(paper_cfg, "paper", raw_data_root(config_dir))), readings)
    by_id = {c["id"]: c for c in claims_cfg["claims"]}
    unknown = [c for c in spec["claims"] if c not in by_id]
    if unknown:
        raise ConfigError(f"variants {spec['name']}: unknown claims {unknown} of {paper}")
    chosen = {**claims_cfg, "claims": [by_id[c] for c in spec["claims"]]}
    base = base_config(spec, config_dir)
    variants = {name: resolve_paper(patched(base, variant["set"]), scale) for name, variant in spec["variants"].items()}
    results_dir = train_checked(spec, {rid: run for runs, _ in variants.values() for rid, run in runs.items()},
                                out_dir, jobs)
    rows = []
    for name, (_, figures) in variants.items():
        tables = {}
        for fig in figures.values():  # the claims read a table as the pipeline does: from its CSV file
            path = results_dir / "tables" / name / f"{fig.name}.csv"
            write_figure_table(fig, results_dir, path)
            tables[fig.name] = read_figure_table(path)
        labels = {fig.name: fig.label_columns for fig in figures.values()}
        ledger = evaluate_claims(chosen, tables, scale, labels, readings)
        ledger = ledger.assign(variant=name, settings=settings_text(spec["variants"][name]["set"]))
        rows.append(ledger[COLUMNS])
    result = pd.concat(rows, ignore_index=True)
    write_result(spec, out_dir, result, markdown(result, spec))
    return result


def markdown(result: pd.DataFrame, study: dict[str, Any]) -> str:
    """The study as a reader scans it: per claim, each variant's measured values and verdict."""
    lines = [f"# Scale study: {study['paper']} ({study['scale']} scale with each variant's settings)", ""]
    if study.get("about"):
        lines += [study["about"].strip(), ""]
    lines += ["| variant | settings |", "|---|---|"]
    lines += [f"| {v} | {settings_text(variant['set'])} |" for v, variant in study["variants"].items()]
    lines += ["", "| claim | variant | verdict | measured | margin |", "|---|---|---|---|---|"]
    for claim in study["claims"]:
        for row in result[result["claim_id"] == claim].itertuples():
            lines.append(f"| {claim} | {row.variant} | {row.status} | {row.measured} | {row.margin} |")
    summary = result.groupby("variant", sort=False)["status"].value_counts().unstack(fill_value=0)
    lines += ["", "| variant | " + " | ".join(summary.columns) + " |", "|---" * (len(summary.columns) + 1) + "|"]
    lines += [f"| {v} | " + " | ".join(str(n) for n in counts) + " |" for v, counts in summary.iterrows()]
    return "\n".join(lines) + "\n"
