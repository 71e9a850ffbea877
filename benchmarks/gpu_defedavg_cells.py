"""DeFedAvg Table I cells at the paper scale on a GPU, within a device-time budget (issue 23's GPU check).

    PYTHONPATH=src python benchmarks/gpu_defedavg_cells.py --budget 420 --out DIR

Runs Table I's DeFedAvg-IID curve of the FMNIST IID panels n = 10 and n = 20 at the paper scale (paper CNN,
N = 100, K = 50, 3 seeds, device auto) with Table II's rates (the paper scale's step-size reading; its
alternative `table_ii` is the same runs there) and with the rates the §4.1.4 protocol chose for the same cell at
the quick scale (scales.quick.per_run). `--readings paper_protocol --horizon H` runs the §4.1.4 protocol itself at
the paper scale instead: every point of the grid config/variants/defedavg_quick.yaml gives the method, one seed,
all to the same cut horizon H, scored as that tuning scores (the area under the test-accuracy curve), the best
chosen as it chooses (fedrepro.variants.tune).
Each run is the pipeline's own (execute_run, as rule train and `fedrepro run` call it); only its simulated
horizon is cut, to what the budget allows, since the paper's 880 s cost ~24 M client-steps a seed and a
time to target needs the curve only up to the target. A cut changes no value before it: the timing trace
and every minibatch are keyed by (seed, client, training), never by the horizon. The horizon is chosen from
the client-steps the run's own timing traces compute up to it (counted here) and a rate per client-step: the
client layer's, doubled, until the first run measures the engine's (on an H200 the guess was 2x too high).
Prints per run the seed-mean time to 90% (the Table I reading) and each seed's, beside the paper; results of
2026-11-26 and -27: docs/performance.md, "DeFedAvg's Table I cells on a GPU". On the device machine (no Snakemake, no jsonschema there): carry the
jsonschema wheels, data/prepared/fashion_mnist.npz and data/raw/fashion_mnist/PROVENANCE.json, and make the
native view first (fedrepro.data.views.prepare_view).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd

from fedrepro.engines.asynchronous import trace_of
from fedrepro.engines.context import resolve_device
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.runtable import RunTable, run_id_of
from fedrepro.experiments.store import run_files
from fedrepro.results.summaries import seed_times, time_to_target
from fedrepro.utils.yaml_file import read_yaml
from fedrepro.validate import load_and_validate
from fedrepro.variants.tune import chosen, grid_of, score

sys.path.insert(0, str(Path(__file__).parent))
from cost_defedavg import seconds_per_step  # noqa: E402

FIGURE, CURVE = "table1", "DeFedAvg-IID"
PANELS = {"FMNIST, IID, n = 10": 26.39, "FMNIST, IID, n = 20": 49.26}  # paper Table I, seconds to 90%
MEASURE_CLIENTS = 16  # clients per call of the rate's first measurement (the engine's calls hold 10-64)
PROTOCOL = Path("config/variants/defedavg_quick.yaml")  # the §4.1.4 grids and criterion, as tuned at quick


def curve_spec(table: RunTable, panel: str) -> dict:
    curve = next(c for c in table.figure("defedavg", FIGURE).curves if c.panel == panel and c.label == CURVE)
    return dict(table.runs[curve.run_id])


def client_steps(spec: dict, horizon: float) -> float:
    return sum(float(trace_of({**spec, "time_horizon": horizon}, s).n_steps.sum()) for s in range(spec["seeds"]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=float, default=420.0, help="seconds of training for all runs together")
    p.add_argument("--out", type=Path, default=Path("adhoc/gpu_defedavg"))
    p.add_argument("--max-horizon-factor", type=float, default=2.5,
                   help="horizon at most this times the paper's time to target")
    p.add_argument("--readings", nargs="+", default=["table_ii", "quick_protocol"],
                   help="table_ii, quick_protocol, paper_protocol (needs --horizon)")
    p.add_argument("--panels", nargs="+", default=list(PANELS))
    p.add_argument("--horizon", type=float, help="a fixed horizon instead (a check of this script on a CPU)")
    p.add_argument("--lr-local", type=float, nargs="+",
                   help="paper_protocol: only these eta-bar of the grid (the rest of it ran before)")
    args = p.parse_args()
    device = resolve_device("auto")
    args.out.mkdir(parents=True, exist_ok=True)
    # until a run measures it: the client layer's own rate, doubled for evaluation and the engine's overhead
    rate = 2 * seconds_per_step((1, 28, 28), "vectorized", MEASURE_CLIENTS, device)
    print(f"client layer on {device}: {rate / 2 * 1e6:.1f} us per client-step ({MEASURE_CLIENTS} clients a call)")
    tables = {scale: load_and_validate({"scale": scale}, Path("config"))[1] for scale in ("paper", "quick")}
    tuning = read_yaml(PROTOCOL) if "paper_protocol" in args.readings else None
    jobs = []
    for reading in args.readings:
        for panel in args.panels:
            paper_time = PANELS[panel]
            spec = curve_spec(tables["paper"], panel)
            if reading == "quick_protocol":
                quick = curve_spec(tables["quick"], panel)
                spec.update(lr_global=quick["lr_global"], lr_local=quick["lr_local"])
            if reading != "paper_protocol":
                jobs.append((reading, panel, paper_time, spec))
                continue
            if not args.horizon:
                p.error("paper_protocol needs --horizon: every trial of a group must see the same horizon")
            grid = grid_of(tuning, spec)
            points = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
            points = [q for q in points if not args.lr_local or q["lr_local"] in args.lr_local]
            # the largest local steps first, should time run out: the smallest are the least likely to win
            for point in sorted(points, key=lambda q: [-q[k] for k in reversed(list(q))]):
                jobs.append(("paper_protocol", panel, paper_time, {**spec, **point, "seeds": 1}))
    start, rows = time.perf_counter(), []
    for i, (reading, panel, paper_time, spec) in enumerate(jobs):
        left = args.budget - (time.perf_counter() - start)
        share = left / (len(jobs) - i) if i else left / 3  # a third for the first: its rate is a guess
        step = spec["eval_every_time"]
        evals = math.ceil(args.max_horizon_factor * paper_time / step)  # the horizon in evaluation steps
        while not args.horizon and evals * step > 1.2 * paper_time and client_steps(spec, evals * step) * rate > share:
            evals -= 1
        horizon = args.horizon or round(evals * step, 6)
        steps = client_steps(spec, horizon)
        if steps * rate > left:
            print(f"skip {reading} {panel}: {steps / 1e6:.1f} M steps would need {steps * rate:.0f} s, {left:.0f} left")
            continue
        spec["time_horizon"] = horizon
        run_id = run_id_of(spec)
        files = run_files(args.out, run_id)
        inputs = RunTable("paper", {run_id: spec}, {}).input_files(run_id)
        print(f"{reading} {panel} lr {spec['lr_global']}/{spec['lr_local']} horizon {horizon:.1f} s: "
              f"{steps / 1e6:.2f} M client-steps, run {run_id}", flush=True)
        record = execute_run(run_id, spec, files, Path(inputs["prepared"]),
                             [Path(f) for f in inputs["provenance"]], device="auto",
                             log_path=args.out / f"{run_id}.log")
        rate = record["wall_seconds"] / max(steps, 1.0)
        metrics = pd.read_csv(files.metrics).assign(run_id=run_id, diverged=record["diverged"])
        mean = time_to_target(metrics, [], "test_accuracy", 0.9, True, x="virtual_time").iloc[0]
        seeds = seed_times(metrics, "test_accuracy", 0.9, True, "virtual_time")["t_target"].tolist()
        rows.append({"reading": reading, "panel": panel, "lr_global": spec["lr_global"], "lr_local": spec["lr_local"],
                     "horizon_s": horizon, "t90_mean_s": mean["t_target"], "t90_seeds_s": seeds,
                     "score": float("-inf") if record["diverged"] else score(metrics, "test_accuracy", "all", "max"),
                     "paper_s": paper_time, "final_acc": float(metrics.groupby("seed")["test_accuracy"].last().mean()),
                     "client_steps_M": round(steps / 1e6, 2), "wall_s": record["wall_seconds"],
                     "us_per_step": round(rate * 1e6, 2), "device": record["device"].get("cuda_device", device),
                     "run_id": run_id})
        print(json.dumps(rows[-1], default=str), flush=True)
        with tarfile.open(args.out / "runs.tar.gz", "w:gz") as tar:  # whatever finished, should time run out
            tar.add(args.out / "runs", arcname="runs")
    if rows:
        table = pd.DataFrame(rows)
        protocol = table[table["reading"] == "paper_protocol"].sort_values(["panel", "lr_global", "lr_local"])
        if len(protocol):  # ordered as the tuning orders its grid, so that a tie goes as it goes there
            picked = protocol[chosen(protocol.reset_index(drop=True), ["panel"], "max").to_numpy()]
            print("the protocol's choice per panel (area under the test-accuracy curve to the cut horizon):")
            print(picked[["panel", "lr_global", "lr_local", "score", "t90_mean_s"]].to_string(index=False))
        table.to_csv(args.out / "cells.csv", index=False)
        print(table.drop(columns=["run_id"]).to_string(index=False))
        print(f"device-seconds of training: {table['wall_s'].sum():.0f} ({table['wall_s'].sum() / 3600:.3f} GPU-hours)"
              if device == "cuda" else f"CPU-seconds of training: {table['wall_s'].sum():.0f}")


if __name__ == "__main__":
    main()
