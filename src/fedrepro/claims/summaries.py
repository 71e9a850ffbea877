"""Per-run summaries of a convergence curve, the quantities the claims compare.

final : geometric mean of the metric over the last `window` fraction of rounds (smooths
        FedPAGE's saw-tooth between full rounds and SGD noise floors; spec §5)
auc   : mean log10 of the metric over all logged rounds
T_eps : first logged round with metric <= eps * metric(round 0); inf if never
A diverged seed has final = auc = T_eps = inf.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.results.tables import label_columns


def seed_summaries(table: pd.DataFrame, metric: str, window: float, eps: list[float]) -> pd.DataFrame:
    """One row per (run_id, seed) with final, auc, g0, T_<eps>, diverged."""
    rows = []
    for (run_id, seed), run in table.groupby(["run_id", "seed"], sort=False):
        run = run.sort_values("round")
        values = run[metric].to_numpy(dtype=float)
        rounds = run["round"].to_numpy()
        diverged = bool(run["diverged"].any()) or not np.all(np.isfinite(values))
        g0 = values[0]
        row = {"run_id": run_id, "seed": seed, "g0": g0, "diverged": diverged, "last_round": rounds[-1]}
        if diverged:
            row.update(final=np.inf, auc=np.inf, **{f"T_{e:g}": np.inf for e in eps})
        else:
            tail = values[rounds >= rounds[-1] * (1 - window)]
            row["final"] = float(np.exp(np.mean(np.log(np.maximum(tail, 1e-300)))))
            row["auc"] = float(np.mean(np.log10(np.maximum(values, 1e-300))))
            for e in eps:
                hit = np.nonzero(values <= e * g0)[0]
                row[f"T_{e:g}"] = float(rounds[hit[0]]) if len(hit) else np.inf
        rows.append(row)
    return pd.DataFrame(rows)


def curve_medians(table: pd.DataFrame, metric: str, window: float, eps: list[float]) -> pd.DataFrame:
    """Seed-medians per run, joined with the run's labels (panel, curve, method, grid keys)."""
    summaries = seed_summaries(table, metric, window, eps)
    value_cols = ["final", "auc", "g0"] + [f"T_{e:g}" for e in eps]
    med = summaries.groupby("run_id")[value_cols].median()
    med["seeds"] = summaries.groupby("run_id")["seed"].nunique()
    med["diverged_seeds"] = summaries.groupby("run_id")["diverged"].sum()
    labels = table.drop_duplicates("run_id").set_index("run_id")
    label_cols = [c for c in label_columns(table) if c != "run_id" and c not in med.columns]
    return med.join(labels[label_cols]).reset_index()
