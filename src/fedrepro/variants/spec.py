"""A variants file, config/variants/<name>.yaml (read by experiments/variant_files.py), in one shape for both kinds: a paper,
the scale whose runs the variants start from, the figures whose runs they need and `set`, a patch over the
paper's configuration laid under every variant (utils/patch.py, as an alternative reading's `set`). Then either
named `variants`, each a `set` of its own, judged by the `claims` listed (STUDY), or a `grid` per group of runs
judged by a score, `select`, on seeds of its own, `seeds` (TUNING: variants/tune.py).

Every run is resolved by the run table from the patched configuration, so a run that no variant changes keeps its
run id. Runs are stored by run id under results/<scale>/variants/<name>/runs (a rerun trains only what is
missing); the result is results/<scale>/variants/<name>.csv and .md."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd

from fedrepro.engines import ENGINES
from fedrepro.errors import ConfigError
from fedrepro.experiments.batch import train_missing
from fedrepro.experiments.runtable import RunTable, load_paper_config
from fedrepro.layout import Layout
from fedrepro.schemas import check
from fedrepro.utils import atomic
from fedrepro.utils.patch import patched


def base_config(spec: dict[str, Any], config_dir: Path = Path("config")) -> dict[str, Any]:
    """The paper's configuration under the file's `set`, with only its `figures` (a mapping's values replace the
    scale's overrides of those figures)."""
    cfg = patched(load_paper_config(config_dir / "papers" / f"{spec['paper']}.yaml"), spec.get("set") or {})
    figures = spec.get("figures")
    if figures:
        unknown = sorted(set(figures) - set(cfg["figures"]))
        if unknown:
            raise ConfigError(f"variants {spec['name']}: unknown figures {', '.join(unknown)} of {spec['paper']}")
        cfg["figures"] = {name: fig for name, fig in cfg["figures"].items() if name in figures}
        if isinstance(figures, dict):
            cfg["scales"][spec["scale"]]["figures"] = copy.deepcopy(figures)
    return cfg


def settings_text(patch: dict[str, Any]) -> str:
    """A variant's patch as one line of key = value, its nesting as dotted keys."""
    def flat(value: Any, at: str) -> list[str]:
        if isinstance(value, dict):
            return [item for k, v in value.items() for item in flat(v, f"{at}.{k}" if at else str(k))]
        return [f"{at} = {value}"]
    return ", ".join(flat(patch, ""))


def results_dir(spec: dict[str, Any], out_dir: Path | None = None) -> Path:
    """Where the file's runs and tables go: <out>/<name> (default out: results/<scale>/variants)."""
    return (out_dir or Layout(spec["scale"]).variants) / spec["name"]


def train_checked(spec: dict[str, Any], runs: dict[str, dict[str, Any]], out_dir: Path | None, jobs: int) -> Path:
    """Check every run against its engine's schema, train those missing; returns the results directory."""
    label = f"variants {spec['name']}"
    for rid, run in runs.items():
        check(run, ENGINES[run["engine"]].schema, f"{label}, run {rid}")
    where = results_dir(spec, out_dir)
    train_missing(RunTable(spec["scale"], runs, {}), where, jobs, label)
    return where


def write_result(spec: dict[str, Any], out_dir: Path | None, result: pd.DataFrame, markdown: str) -> None:
    where = results_dir(spec, out_dir)
    atomic.write_text(where.with_suffix(".csv"), result.to_csv(index=False))
    atomic.write_text(where.with_suffix(".md"), markdown)
