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

from fedrepro.results.monte_carlo import curves_of
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


def monte_carlo_summaries(table: pd.DataFrame, coords: tuple[int, int] = (0, 1), target: float = 1e-4) -> pd.DataFrame:
    """One row per curve of a Monte Carlo table (engine `monte_carlo`): statistics across the
    runs, the quantities the fedvr claims compare (spec §4 "Metric definitions", §5).

    mean_err_final : mean over runs of f(θ_K) − f*          rel_err_final : that / the same at round 0
    auc            : mean over k >= 1 of log10 mean_err[k]   t_target      : first k with mean_err[k] <= target
    var_final      : variance across runs of f(θ_K) (ddof=0) cep_2d/cep_full/cep_cost : CEP of the final iterates
    opt_dist       : ||mean_r θ_K − θ*||                     f_star, runs, last_round, diverged_runs
    A curve with a diverged (non-finite) run gets inf for every statistic but f_star.
    """
    rows = []
    for labels, mc in curves_of(table):
        row = {**labels, "runs": mc.n_runs, "last_round": int(mc.rounds[-1]), "diverged_runs": int(mc.diverged.sum()),
               "f_star": mc.f_star}
        stats = ("mean_err_final", "rel_err_final", "auc", "t_target", "var_final", "cep_2d", "cep_full",
                 "cep_cost", "opt_dist")
        if mc.diverged.any() or not np.isfinite(mc.cost).all():
            row.update(dict.fromkeys(stats, np.inf))
        else:
            curves = mc.curves()
            mean_err = curves["mean_err"]
            hit = np.nonzero(mean_err <= target)[0]
            row.update(
                mean_err_final=float(mean_err[-1]),
                rel_err_final=float(mean_err[-1] / mean_err[0]),
                auc=float(np.mean(np.log10(np.maximum(mean_err[mc.rounds >= 1], 1e-300)))),
                t_target=float(mc.rounds[hit[0]]) if len(hit) else np.inf,
                var_final=float(curves["var"][-1]),
                opt_dist=float(np.linalg.norm(mc.theta_final.mean(axis=0) - mc.theta_star)),
                **mc.cep(coords),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def auc_fin_per_seed(table: pd.DataFrame, metric: str, higher_is_better: bool = False) -> pd.DataFrame:
    """One row per (run, seed) with the FedCluster spec's curve summaries (§4 "Metric definitions"),
    joined with the run's labels:

    auc : mean of the metric over the logged rounds (the "area under the curve", linear scale)
    fin : mean over the rounds in the last max(1, ceil(T/10)) of the T rounds
    A diverged seed gets the worst value (inf for a loss, -inf for an accuracy) for both.
    """
    worst = -np.inf if higher_is_better else np.inf
    rows = []
    for (run_id, seed), run in table.groupby(["run_id", "seed"], sort=False):
        run = run.sort_values("round")
        values, rounds = run[metric].to_numpy(dtype=float), run["round"].to_numpy()
        diverged = bool(run["diverged"].any()) or not np.all(np.isfinite(values))
        window = max(1, int(np.ceil(rounds[-1] / 10)))
        tail = values[rounds > rounds[-1] - window]
        rows.append({"run_id": run_id, "seed": seed, "diverged": diverged,
                     "auc": worst if diverged else float(values.mean()),
                     "fin": worst if diverged else float(tail.mean())})
    labels = table.drop_duplicates("run_id").set_index("run_id")[[c for c in label_columns(table) if c != "run_id"]]
    return pd.DataFrame(rows).join(labels, on="run_id")
