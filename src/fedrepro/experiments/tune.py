"""A step-size grid search as a paper's protocol describes it (TDCD paper §5.2: "for each Q and K ... pick the
learning rate with the lowest training loss"), reproducible and frozen into the configuration.

config/tuning/<name>.yaml names a paper, a scale, the `setting` to tune, the settings that identify a
tuned group of runs (`by`, e.g. dataset, N, K, Q), a grid of values per value of `grid_by` (e.g. per
dataset), what selects (`select`: the metric, lowest wins, smoothed over the last evaluations), the
settings of every trial (`trial`, e.g. one seed) and optionally the `figures` whose runs it tunes
(default: all). Every run of the scale is resolved by the run table; each group's run is trained once per
grid value (trials stored by run id under results/<scale>/tuning/<name>/runs, so a rerun trains only what is
missing); the value with the lowest score wins. The result (results/<scale>/tuning/<name>.{csv,md}) gives the `per_run` entries to freeze in the paper's
configuration and says where the configuration differs from them: the pipeline never reads a tuning
result, only the configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from fedrepro.engines import ENGINES
from fedrepro.errors import ConfigError
from fedrepro.experiments.batch import train_missing
from fedrepro.experiments.runtable import RunTable, load_paper_config, resolve_paper, run_id_of
from fedrepro.layout import Layout
from fedrepro.results.store import read_verified_record, run_files
from fedrepro.utils import atomic
from fedrepro.validate import check

TUNING_KEYS = {"paper", "scale", "setting", "by", "grid_by", "grid", "select", "trial", "figures", "about"}
REQUIRED = {"paper", "scale", "setting", "by", "grid_by", "grid", "select"}


def load_tuning(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"no tuning {path}")
    with open(path) as fh:
        tuning = yaml.safe_load(fh)
    missing, unknown = REQUIRED - set(tuning), set(tuning) - TUNING_KEYS
    problems = [f"{what} {', '.join(sorted(keys))}" for what, keys in (("missing", missing), ("unknown", unknown)) if keys]
    if not problems and (set(tuning["select"]) != {"metric", "last"} or int(tuning["select"]["last"]) < 1):
        problems.append("select needs exactly metric and last (>= 1)")
    if not problems and (tuning["setting"] in tuning["by"] or tuning["grid_by"] not in tuning["by"]):
        problems.append(f"by must name grid_by ({tuning['grid_by']}) and not the tuned setting ({tuning['setting']})")
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    return tuning


def groups_of(runs: dict[str, dict[str, Any]], tuning: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    """One run spec per group (its values of `by`), as the configuration sets it. Two runs of one group
    must differ only in the tuned setting: else `by` misses what tells them apart."""
    groups: dict[tuple, dict[str, Any]] = {}
    for spec in runs.values():
        missing = [k for k in tuning["by"] if k not in spec]
        if missing:
            raise ConfigError(f"tuning: run {run_id_of(spec)} has no setting {', '.join(missing)} named in `by`")
        key = tuple(spec[k] for k in tuning["by"])
        first = groups.setdefault(key, spec)
        differ = sorted(k for k in set(first) | set(spec) if k != tuning["setting"] and first.get(k) != spec.get(k))
        if differ:
            raise ConfigError(f"tuning: runs with {dict(zip(tuning['by'], key))} differ in {', '.join(differ)}; "
                              f"add it to `by`")
    return groups


def trials_of(groups: dict[tuple, dict[str, Any]], tuning: dict[str, Any]) -> pd.DataFrame:
    """One row per (group, grid value): the trial's run id and spec (the group's run with the value and
    the `trial` settings)."""
    rows = []
    for key, spec in groups.items():
        grid = tuning["grid"].get(spec[tuning["grid_by"]])
        if not grid:
            raise ConfigError(f"tuning: no grid for {tuning['grid_by']} = {spec[tuning['grid_by']]}")
        for value in grid:
            trial = {**spec, **(tuning.get("trial") or {}), tuning["setting"]: value}
            rows.append({**dict(zip(tuning["by"], key)), "value": value, "run_id": run_id_of(trial), "spec": trial})
    return pd.DataFrame(rows)


def score(metrics: pd.DataFrame, metric: str, last: int) -> float:
    """The mean over seeds of the mean of a run's last `last` evaluations of `metric` (the smoothing of
    docs/papers/tdcd.md R21); inf when any value is not finite (a diverged trial loses)."""
    values = metrics[metric].to_numpy(dtype=float)
    if not np.isfinite(values).all():
        return float("inf")
    return float(metrics.groupby("seed")[metric].apply(lambda v: v.iloc[-last:].mean()).mean())


def chosen(result: pd.DataFrame, by: list[str]) -> pd.Series:
    """Per group (its values of `by`), True at the trial with the lowest finite score. A tie goes to the value
    listed first in the grid (the grids are ascending: the smaller step size); a group whose every trial
    diverged chooses none."""
    finite = result[np.isfinite(result["score"])]
    return pd.Series(result.index.isin(finite.groupby(by, sort=False)["score"].idxmin()), index=result.index)


def per_run_entries(chosen: pd.DataFrame, tuning: dict[str, Any]) -> list[dict[str, Any]]:
    """The `per_run` entries of the paper's scale that freeze the chosen values."""
    return [{"where": {k: _plain(row[k]) for k in tuning["by"]}, "set": {tuning["setting"]: _plain(row["value"])}}
            for _, row in chosen.iterrows()]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def run_tuning(name: str, config_dir: Path = Path("config"), out_dir: Path | None = None,
               jobs: int = 2) -> pd.DataFrame:
    """Train every trial, score it, choose per group; write <out>/<name>.csv (every trial) and .md (default out:
    results/<scale>/tuning, in the tree of the tuning's scale)."""
    tuning = load_tuning(config_dir / "tuning" / f"{name}.yaml")
    out_dir = out_dir or Layout(tuning["scale"]).results / "tuning"
    paper_cfg = load_paper_config(config_dir / "papers" / f"{tuning['paper']}.yaml")
    if tuning.get("figures"):
        unknown = sorted(set(tuning["figures"]) - set(paper_cfg["figures"]))
        if unknown:
            raise ConfigError(f"tuning {name}: unknown figures {', '.join(unknown)} of {tuning['paper']}")
        paper_cfg = {**paper_cfg, "figures": {k: v for k, v in paper_cfg["figures"].items() if k in tuning["figures"]}}
    runs, _ = resolve_paper(paper_cfg, tuning["scale"])
    trials = trials_of(groups_of(runs, tuning), tuning)
    for spec in trials["spec"]:
        check(spec, ENGINES[spec["engine"]].schema, f"tuning {name}")
    results_dir = out_dir / name
    train_missing(RunTable(tuning["scale"], dict(zip(trials["run_id"], trials["spec"])), {}), results_dir, jobs,
                  f"tuning {name}")

    metric, last = tuning["select"]["metric"], int(tuning["select"]["last"])
    scores = []
    for rid in trials["run_id"]:
        files = run_files(results_dir, rid)
        read_verified_record(files)  # the metrics are the ones the trial wrote
        scores.append(score(pd.read_csv(files.metrics), metric, last))
    result = trials.drop(columns="spec").assign(score=scores)
    by = tuning["by"]
    result["chosen"] = chosen(result, by)
    configured = {tuple(spec[k] for k in by): spec[tuning["setting"]] for spec in runs.values()}
    result["configured"] = [configured[tuple(row[k] for k in by)] for _, row in result.iterrows()]
    atomic.write_text(out_dir / f"{name}.csv", result.to_csv(index=False))
    atomic.write_text(out_dir / f"{name}.md", markdown(result, tuning, name))
    return result


def markdown(result: pd.DataFrame, tuning: dict[str, Any], name: str) -> str:
    """Per group, every grid value's score with the lowest in bold, the configured value, and the
    per_run block to freeze."""
    by, setting = tuning["by"], tuning["setting"]
    metric, last = tuning["select"]["metric"], tuning["select"]["last"]
    lines = [f"# Tuning {name}: {setting} of {tuning['paper']} at the {tuning['scale']} scale", ""]
    if tuning.get("about"):
        lines += [tuning["about"].strip(), ""]
    lines += [f"Score: the mean of the last {last} evaluations of {metric} (lowest wins; inf: diverged). "
              f"Trial settings: {tuning.get('trial') or {}}.", "",
              "| " + " | ".join(by) + f" | scores ({setting}: score) | chosen | configured |",
              "|" + "---|" * (len(by) + 3)]
    chosen = result[result["chosen"]]
    disagree = 0
    for key, group in result.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        cells = ", ".join((f"**{v:g}: {s:.4g}**" if c else f"{v:g}: {s:.4g}")
                          for v, s, c in zip(group["value"], group["score"], group["chosen"]))
        picked, configured = group.loc[group["chosen"], "value"], group["configured"].iloc[0]
        disagree += picked.empty or picked.iloc[0] != configured
        if picked.empty:
            pick = "none (all diverged)"
        else:
            edge = picked.iloc[0] in (group["value"].min(), group["value"].max())
            pick = f"{picked.iloc[0]:g}" + (" (grid edge)" if edge else "")
        lines.append("| " + " | ".join(str(k) for k in key) + f" | {cells} | {pick} | {configured:g} |")
    lines += ["", f"The configuration differs from the chosen value in {disagree} of "
              f"{result.groupby(by, sort=False).ngroups} groups.", "",
              f"`per_run` entries for scales.{tuning['scale']} of config/papers/{tuning['paper']}.yaml:", "", "```yaml",
              "per_run:"]
    lines += [f"  - {yaml.safe_dump(entry, default_flow_style=True, sort_keys=False, width=200).strip()}"
              for entry in per_run_entries(chosen, tuning)]
    lines += ["```"]
    return "\n".join(lines) + "\n"
