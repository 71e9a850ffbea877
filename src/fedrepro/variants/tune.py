"""A step-size grid search as a paper's protocol describes it (TDCD paper §5.2: "for each Q and K ... pick the
learning rate with the lowest training loss"; DeFedAvg paper §4.1.4: the rates from its grids "that yield the best
convergence performance"), reproducible and frozen into the configuration.

Its variants file (variants/spec.py) names the settings that identify a tuned group of runs (`by`, e.g. dataset,
N, K, Q), a grid per value of `grid_by` (e.g. per dataset or method): a mapping from each tuned setting to its
values, every combination a trial; and what selects (`select`: the metric, over the last evaluations or `all`, and
the `goal`: min, the default, or max). Its `set` holds what every trial shares, and `seeds` ({first, count}) the
seeds every trial trains: seeds of its own, none of which a run of the paper is judged on at any scale (refused
otherwise: the DESIGN's "tuning never uses the judged seeds"). Each group's run is trained once per combination; the
best score wins. The result gives the `per_run` entries to freeze in the paper's configuration, with the `tunings`
entry that records the seeds they were chosen on (the ledger's record names them), and says where the
configuration differs from them: the pipeline never reads a tuning result, only the configuration.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import judged_seeds, load_paper_config, raw_data_root, resolve_paper, run_id_of
from fedrepro.experiments.store import read_verified_record, run_files
from fedrepro.numerics import keying
from fedrepro.experiments.variant_files import seed_range, tuned_settings
from fedrepro.variants.spec import base_config, settings_text, train_checked, write_result

GOALS = ("min", "max")


def check_tuning(spec: dict[str, Any]) -> None:
    """What the schema cannot say: `by` names grid_by and none of the tuned settings."""
    if set(tuned_settings(spec)) & set(spec["by"]) or spec["grid_by"] not in spec["by"]:
        raise ConfigError(f"variants {spec.get('name', '')}: by must name grid_by ({spec['grid_by']}) and none of the "
                          f"tuned settings ({', '.join(tuned_settings(spec))})")


def check_seeds(spec: dict[str, Any], config_dir: Path = Path("config")) -> None:
    """A tuning trains seeds of its own: refused when one of them is a seed that a run of its paper is judged on
    (runtable.judged_seeds: every scale, every reading), so that no verdict reads a seed its settings were chosen on."""
    paper_cfg = load_paper_config(config_dir / "papers" / f"{spec['paper']}.yaml")
    shared = sorted(set(seed_range(spec["seeds"])) & judged_seeds(paper_cfg, raw_data_root(config_dir)))
    if shared:
        raise ConfigError(f"variants {spec.get('name', '')}: seeds {_seeds_text(seed_range(spec['seeds']))} include "
                          f"seeds {_seeds_text(shared)} that runs of {spec['paper']} are judged on; a tuning trains "
                          f"seeds of its own: raise seeds.first")


def _seeds_text(seeds: list[int]) -> str:
    """0-4, or 3 for one seed: a contiguous range as its ends, else the list."""
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def grid_of(tuning: dict[str, Any], spec: dict[str, Any]) -> dict[str, list[Any]]:
    """The grid of a run (or a result row): the one its value of `grid_by` names."""
    grid = tuning["grid"].get(spec[tuning["grid_by"]])
    if not grid:
        raise ConfigError(f"tuning: no grid for {tuning['grid_by']} = {spec[tuning['grid_by']]}")
    return grid


def groups_of(runs: dict[str, dict[str, Any]], tuning: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    """One run spec per group (its values of `by`), as the configuration sets it. Two runs of one group
    must differ only in the tuned settings: else `by` misses what tells them apart."""
    groups: dict[tuple, dict[str, Any]] = {}
    tuned = set(tuned_settings(tuning))
    for spec in runs.values():
        missing = [k for k in tuning["by"] if k not in spec]
        if missing:
            raise ConfigError(f"tuning: run {run_id_of(spec)} has no setting {', '.join(missing)} named in `by`")
        key = tuple(spec[k] for k in tuning["by"])
        first = groups.setdefault(key, spec)
        differ = sorted(k for k in set(first) | set(spec) if k not in tuned and first.get(k) != spec.get(k))
        if differ:
            raise ConfigError(f"tuning: runs with {dict(zip(tuning['by'], key))} differ in {', '.join(differ)}; "
                              f"add it to `by`")
    return groups


def pairing(engine: str, settings: list[str]) -> str:
    """Whether the trials of a group are paired: they are when the tuned settings key none of the engine's random
    streams (numerics.py KEYING), so every trial draws the same clients, minibatches and coins."""
    keyed = [k for k in settings if keying(engine).keys(k)]
    if keyed:
        return (f"The trials of a group are not paired: {', '.join(keyed)} key(s) the {engine} engine's random "
                f"streams, so the trials differ in their draws as well.")
    return (f"The trials of a group are paired: {', '.join(settings)} key(s) none of the {engine} engine's random "
            f"streams (numerics.py KEYING), so every trial draws the same clients, minibatches and coins.")


def trials_of(groups: dict[tuple, dict[str, Any]], tuning: dict[str, Any]) -> pd.DataFrame:
    """One row per (group, combination of its grid's values, the first setting's values outermost): the
    trial's run id and spec (the group's run with the values, on the tuning's `seeds`)."""
    rows = []
    seeds = {"first_seed": tuning["seeds"]["first"], "seeds": tuning["seeds"]["count"]}
    for key, spec in groups.items():
        grid = grid_of(tuning, spec)
        for values in itertools.product(*grid.values()):
            point = dict(zip(grid, values))
            trial = {**spec, **point, **seeds}
            rows.append({**dict(zip(tuning["by"], key)), **point, "run_id": run_id_of(trial), "spec": trial})
    return pd.DataFrame(rows)


def score(metrics: pd.DataFrame, metric: str, last: int | str, goal: str = "min") -> float:
    """The mean over seeds of the mean of a run's last `last` (or `all`) evaluations of `metric` (the
    smoothing of docs/papers/tdcd.md R21; over all of a curve, its area: how fast and how far it goes); the
    worst score (inf for min, -inf for max) when any value is not finite (a diverged trial loses)."""
    values = metrics[metric].to_numpy(dtype=float)
    if not np.isfinite(values).all():
        return worst(goal)
    window = (lambda v: v) if last == "all" else (lambda v: v.iloc[-int(last):])
    return float(metrics.groupby("seed")[metric].apply(lambda v: window(v).mean()).mean())


def worst(goal: str) -> float:
    return float("inf") if goal == "min" else float("-inf")


def chosen(result: pd.DataFrame, by: list[str], goal: str = "min") -> pd.Series:
    """Per group (its values of `by`), True at the trial with the best finite score. A tie goes to the trial
    listed first (the grids are ascending: the smaller step size, the first setting's values outermost); a
    group whose every trial diverged chooses none."""
    finite = result[np.isfinite(result["score"])]
    best = finite.groupby(by, sort=False)["score"]
    picked = best.idxmin() if goal == "min" else best.idxmax()
    return pd.Series(result.index.isin(picked), index=result.index)


def per_run_entries(chosen: pd.DataFrame, tuning: dict[str, Any]) -> list[dict[str, Any]]:
    """The `per_run` entries of the paper's scale that freeze the chosen values."""
    return [{"where": {k: _plain(row[k]) for k in tuning["by"]},
             "set": {k: _plain(row[k]) for k in grid_of(tuning, row)}}
            for _, row in chosen.iterrows()]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def run_tuning(spec: dict[str, Any], config_dir: Path = Path("config"), out_dir: Path | None = None,
               jobs: int = 2) -> pd.DataFrame:
    """Train every trial, score it, choose per group; write the result (every trial, variants/spec.py)."""
    check_tuning(spec)
    check_seeds(spec, config_dir)
    runs, _ = resolve_paper(base_config(spec, config_dir), spec["scale"])
    trials = trials_of(groups_of(runs, spec), spec)
    results_dir = train_checked(spec, dict(zip(trials["run_id"], trials["spec"])), out_dir, jobs)

    metric, last = spec["select"]["metric"], spec["select"]["last"]
    goal = spec["select"].get("goal", "min")
    scores = []
    for rid in trials["run_id"]:
        files = run_files(results_dir, rid)
        record = read_verified_record(files)  # the metrics are the ones the trial wrote
        diverged = record.get("diverged", False)
        scores.append(worst(goal) if diverged else score(pd.read_csv(files.metrics), metric, last, goal))
    result = trials.drop(columns="spec").assign(score=scores)
    by, settings = spec["by"], tuned_settings(spec)
    result["chosen"] = chosen(result, by, goal)
    configured = {tuple(run[k] for k in by): _values_text({k: run.get(k) for k in grid_of(spec, run)})
                  for run in runs.values()}
    result["configured"] = [configured[tuple(row[k] for k in by)] for _, row in result.iterrows()]
    result = result[[*by, *settings, "run_id", "score", "chosen", "configured"]]
    engine = next(iter(runs.values()))["engine"]
    write_result(spec, out_dir, result, markdown(result, spec, spec["name"], pairing(engine, settings)))
    return result


def _values_text(values: dict[str, Any]) -> str:
    """`lr_global=0.1, lr_local=0.05`; a single setting by its value alone."""
    if len(values) == 1:
        return f"{next(iter(values.values())):g}"
    return ", ".join(f"{k}={v:g}" for k, v in values.items())


def markdown(result: pd.DataFrame, tuning: dict[str, Any], name: str, paired: str) -> str:
    """Per group, every combination's score with the best in bold, the configured values, and the
    per_run block to freeze; `paired`: whether the trials are paired (pairing)."""
    by, settings = tuning["by"], tuned_settings(tuning)
    select = tuning["select"]
    goal = select.get("goal", "min")
    over = "all evaluations" if select["last"] == "all" else f"the last {select['last']} evaluations"
    worst_text = "inf" if goal == "min" else "-inf"
    lines = [f"# Tuning {name}: {', '.join(settings)} of {tuning['paper']} at the {tuning['scale']} scale", ""]
    if tuning.get("about"):
        lines += [tuning["about"].strip(), ""]
    lines += [f"Score: the mean over {over} of {select['metric']} ({'lowest' if goal == 'min' else 'highest'} "
              f"wins; {worst_text}: diverged). Every trial trains seeds {_seeds_text(seed_range(tuning['seeds']))}, "
              f"none of them judged; what else they share: {settings_text(tuning.get('set') or {}) or 'nothing'}."
              f" {paired}", "",
              "| " + " | ".join(by) + f" | scores ({', '.join(settings)}: score) | chosen | configured |",
              "|" + "---|" * (len(by) + 3)]
    chosen = result[result["chosen"]]
    disagree = 0
    for key, group in result.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        grid = grid_of(tuning, group.iloc[0])
        texts = [_values_text({k: row[k] for k in grid}) for _, row in group.iterrows()]
        cells = ", ".join((f"**{t}: {s:.4g}**" if c else f"{t}: {s:.4g}")
                          for t, s, c in zip(texts, group["score"], group["chosen"]))
        picked = [t for t, c in zip(texts, group["chosen"]) if c]
        configured = group["configured"].iloc[0]
        disagree += not picked or picked[0] != configured
        if not picked:
            pick = "none (all diverged)"
        else:
            row = group[group["chosen"]].iloc[0]
            edge = any(row[k] in (min(values), max(values)) for k, values in grid.items() if len(values) > 2)
            pick = picked[0] + (" (grid edge)" if edge else "")
        lines.append("| " + " | ".join(str(k) for k in key) + f" | {cells} | {pick} | {configured} |")
    lines += ["", f"The configuration differs from the chosen values in {disagree} of "
              f"{result.groupby(by, sort=False).ngroups} groups.", "",
              f"`per_run` entries for scales.{tuning['scale']} of config/papers/{tuning['paper']}.yaml, and the `tunings` "
              f"entry that records the seeds they were chosen on:", "", "```yaml",
              f"tunings: {{{name}: {{first: {tuning['seeds']['first']}, count: {tuning['seeds']['count']}}}}}",
              "per_run:"]
    lines += [f"  - {yaml.safe_dump(entry, default_flow_style=True, sort_keys=False, width=200).strip()}"
              for entry in per_run_entries(chosen, tuning)]
    lines += ["```"]
    return "\n".join(lines) + "\n"
