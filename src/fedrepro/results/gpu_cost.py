"""What a scale's network runs cost on GPUs, from measured rates: `fedrepro cost --scale paper --gpus N`.

The rates are benchmarks/gpu_throughput.py's records (RECORDS: one JSON line per workload and session, each with
its card; the newest of each workload is used). A run's work is counted from its spec, as its engine would do it:
- federated_nn: round(frac x n_devices) clients x E steps a round (FedCluster's M cycles activate as many as
  FedAvg's one), at FedCluster's rate (10 clients a call) or FedAvg's (100); centralized SGD's steps of
  `csgd_batch` samples count as that many samples' worth of B-sample client-steps at FedAvg's rate (not measured);
- async: the client-steps of the run's own timing trace (only consumed trainings are computed), counted on the
  first TRACE_SHARE of its horizon (or rounds) and scaled up: 3.008 G against the whole traces' 3.021 G at the
  paper scale (0.4%; each run within 5%, counted 2026-11-27 on every sixth run), in 6 s rather than 4 min;
- vertical: N silos x K clients a local iteration; MIMIC's LSTM silos have no measured rate.
Evaluations: one per the run's cadence, at the benchmark's measured seconds (`eval_seconds_full`: TDCD's scaled
from the benchmark's few hundred IDs to the run's evaluation sets).
A run's job trains its seeds one after another, or with `--seed-workers K` (config `seed_workers`) K at once in
waves, each seed at 1/K of the rate K processes together reach on one GPU (the benchmark's `--processes K` records;
a workload measured only alone has no price at K). Jobs (one a run, `--gpus=1` each, as profiles/slurm submits
them) are packed onto N GPUs longest first, which gives the wall time.
"""

from __future__ import annotations

import heapq
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrepro.engines import ENGINES
from fedrepro.engines.asynchronous import trace_of
from fedrepro.engines.context import FLOAT_SETTINGS
from fedrepro.errors import ResultsError

RECORDS = Path("benchmarks/records/gpu_throughput.jsonl")
TRACE_SHARE = 0.02
MIN_ROUNDS = 50  # a run of rounds whose share has fewer is counted whole
# the benchmark's workload whose rate stands for a run, by (engine, algorithm or dataset)
FEDCLUSTER = {"fedcluster": "fedcluster_10", "fedavg": "fedcluster_100", "csgd": "fedcluster_100"}
DEFEDAVG = {"fashion_mnist": "defedavg_fmnist", "cifar10": "defedavg_cifar10"}
TDCD = {"resnet18_cifar": "tdcd_cifar10", "resnet18_imagenet": "tdcd_modelnet"}


@dataclass(frozen=True)
class RunCost:
    run_id: str
    paper: str
    workload: str | None  # None: no measured rate stands for this run
    client_steps: float  # all seeds
    evaluations: int  # all seeds
    seconds: float  # nan without a rate
    limit_minutes: int  # the runtime a cluster job asks for (Engine.runtime_minutes)


def load_rates(path: Path | None = None, processes: int = 1) -> dict[str, dict[str, Any]]:
    """The newest record of each workload measured in `processes` processes at once on one GPU, on the path the runs
    train on (the file is appended to, one line per workload and session; a record without `processes` ran alone)."""
    path = path or RECORDS
    if not path.is_file():
        raise ResultsError(f"{path}: no GPU rates recorded; run benchmarks/gpu_throughput.py --record on a GPU")
    rates: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if record.get("processes", 1) == processes and _the_runs_own_path(record):
                rates[record["workload"]] = record
    return rates


def _the_runs_own_path(record: dict[str, Any]) -> bool:
    """Whether a record measured what the runs train: their float settings (FLOAT_SETTINGS) and no candidate of the
    benchmark's switched on (`--grouped-on-cuda`, a silo backend chosen by name, `--tf32 off`). A key that an older
    record lacks had its default."""
    settings = record.get("float_settings", {})
    return (not record.get("grouped_on_cuda") and record.get("run", {}).get("backend", "auto") == "auto"
            and all(settings.get(name, value) == value for name, value in FLOAT_SETTINGS.items()))


def _evaluations(spec: dict[str, Any], steps_key: str) -> int:
    if "eval_every_time" in spec:
        return int(spec["time_horizon"] // spec["eval_every_time"]) + 1
    return spec[steps_key] // spec.get("eval_every", 1) + 1


def _async_steps(spec: dict[str, Any]) -> float:
    """Client-steps of one seed's trace, from its first TRACE_SHARE scaled up."""
    key = "time_horizon" if "time_horizon" in spec else "rounds"
    cut = spec[key] * TRACE_SHARE if key == "time_horizon" else round(spec[key] * TRACE_SHARE)
    if key == "rounds" and cut < MIN_ROUNDS:  # a short run: its whole trace, which costs little
        cut = spec[key]
    part, share = {**spec, key: cut}, cut / spec[key]
    return float(trace_of(part, 0).n_steps.sum()) / share


def run_work(spec: dict[str, Any]) -> tuple[str | None, float]:
    """(the workload whose rate stands for the run, or None; client-steps of one seed)."""
    engine = spec["engine"]
    if engine == "federated_nn":  # (centralized SGD's samples a round are FedAvg's: algorithms/fedcluster.py)
        return FEDCLUSTER[spec["algorithm"]], float(round(spec["frac"] * spec["n_devices"]) * spec["E"] * spec["rounds"])
    if engine == "async":
        return DEFEDAVG.get(spec["dataset"]), _async_steps(spec)
    if engine == "vertical":
        return TDCD.get(spec["model"]), float(spec["iterations"] * spec["N"] * spec["K"])
    return None, 0.0  # the CPU engines


def run_cost(run_id: str, spec: dict[str, Any], rates: dict[str, dict[str, Any]], seed_workers: int = 1) -> RunCost:
    """The run's work and its job's seconds at `rates` (measured in `seed_workers` processes at once: load_rates)."""
    engine = ENGINES[spec["engine"]]
    workload, steps = run_work(spec)
    per_seed = _evaluations(spec, engine.steps_key)
    evaluations = per_seed * spec["seeds"]
    rate = rates.get(workload) if workload else None
    seconds = float("nan")
    if rate is not None:  # waves of `seed_workers` seeds (a last, smaller wave priced as a full one)
        waves = math.ceil(len(engine.seed_groups(list(range(spec["seeds"])))) / seed_workers)
        seed_seconds = steps * seed_workers / rate["client_steps_per_s"] + per_seed * rate["eval_seconds_full"]
        seconds = waves * seed_seconds
    return RunCost(run_id, spec["paper"], workload if rate else None, steps * spec["seeds"], evaluations, seconds,
                   engine.runtime_minutes(spec))


def makespan(seconds: list[float], gpus: int) -> float:
    """Wall time of jobs packed onto `gpus` GPUs, longest first (each job on one GPU)."""
    loads = [0.0] * gpus
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + s)
    return max(loads)


@dataclass(frozen=True)
class PaperCost:
    """A paper's network runs at a scale, priced: `hours` over the `priced` runs with a measured rate, measured on
    `card`; `seeds`, the seeds a run has (one number where all agree); `unpriced`, the models without a rate."""
    runs: int
    priced: int
    hours: float
    card: str
    seeds: tuple[int, ...]
    unpriced: tuple[str, ...]

    def text(self) -> str:
        """"GPU: 6.7 H200-hours (60 runs x 5 seeds)", and the runs it leaves out."""
        seeds = f" x {self.seeds[0]} seeds" if len(self.seeds) == 1 else ""
        text = f"GPU: {self.hours:,.{0 if self.hours >= 100 else 1}f} {self.card}-hours ({self.priced} runs{seeds})"
        if self.unpriced:
            text += f", without {self.runs - self.priced} {', '.join(self.unpriced)} runs (no measured rate)"
        return text


def paper_costs(runs: dict[str, dict[str, Any]], rates: dict[str, dict[str, Any]]) -> dict[str, PaperCost]:
    """Each paper's network runs priced at `rates` on one card: the one figure the README and the paper pages quote
    (paper_docs.py). Rates from several cards are refused: their hours would add different GPUs' times."""
    costs = [run_cost(rid, spec, rates, 1) for rid, spec in runs.items() if ENGINES[spec["engine"]].trains_networks]
    found = {}
    for paper in sorted({c.paper for c in costs}):
        mine = [c for c in costs if c.paper == paper]
        timed = [c for c in mine if c.workload]
        cards = sorted({rates[c.workload]["card"] for c in timed})
        if len(cards) > 1:
            raise ResultsError(f"{paper}: its runs' rates were measured on {' and '.join(cards)}; a cost adds one "
                               f"card's hours: record every workload on one card (benchmarks/gpu_throughput.py)")
        found[paper] = PaperCost(len(mine), len(timed), sum(c.seconds for c in timed) / 3600,
                                 cards[0].removeprefix("NVIDIA ") if cards else "GPU",
                                 tuple(sorted({runs[c.run_id]["seeds"] for c in mine})),
                                 tuple(sorted({runs[c.run_id]["model"] for c in mine if not c.workload})))
    return found


def gpu_plan(runs: dict[str, dict[str, Any]], gpus: int, rates: dict[str, dict[str, Any]], seed_workers: int = 1) -> str:
    """Markdown: per paper, the runs, client-steps, GPU-hours and wall time on `gpus` GPUs; the rates used (measured
    in `seed_workers` processes at once: load_rates)."""
    costs = [run_cost(rid, spec, rates, seed_workers) for rid, spec in runs.items()
             if ENGINES[spec["engine"]].trains_networks]
    at_once = f", {seed_workers} seeds at once" if seed_workers > 1 else ""
    lines = [f"## GPU plan: {gpus} GPU{'s' * (gpus > 1)}, one job per run (`--gpus=1`, profiles/slurm){at_once}", "",
             "| paper | runs | runs with a measured rate | client-steps (G) | GPU-hours | wall on "
             f"{gpus} GPU{'s' * (gpus > 1)} (h) | longest run (h) | runs over their job's runtime limit |",
             "|---|---|---|---|---|---|---|---|"]
    for paper in sorted({c.paper for c in costs}):
        mine = [c for c in costs if c.paper == paper]
        timed = [c for c in mine if c.workload]
        hours = sum(c.seconds for c in timed) / 3600
        over = sum(c.seconds / 60 > c.limit_minutes for c in timed)
        wall = makespan([c.seconds for c in timed], gpus) / 3600 if timed else float("nan")
        longest = max((c.seconds for c in timed), default=float("nan")) / 3600
        lines.append(f"| {paper} | {len(mine)} | {len(timed)} | {sum(c.client_steps for c in mine) / 1e9:.3f} | "
                     f"{hours:.1f} | {wall:.2f} | {longest:.2f} | {over} |")
    measured = f"measured in {seed_workers} processes at once on one GPU, their sum" if seed_workers > 1 else "alone"
    lines += ["", f"Rates (benchmarks/gpu_throughput.py, the newest record of each workload {measured}, on the runs' "
              "own path and float settings):", "",
              "| workload | card | date | client-steps/s | TFLOP/s | one evaluation (s) |", "|---|---|---|---|---|---|"]
    for name, r in sorted(rates.items()):
        lines.append(f"| {name} | {r['card']} | {r.get('date', '?')} | {r['client_steps_per_s']:.1f} | "
                     f"{r['tflops']:.2f} | {r['eval_seconds_full']:.2f} |")
    missing = sorted({c.run_id for c in costs if not c.workload})
    if missing:
        how = (f" (measure them: benchmarks/gpu_throughput.py --processes {seed_workers} --record on a GPU)"
               if seed_workers > 1 else "")
        lines += ["", f"No measured rate for {len(missing)} runs (not in the totals): "
                      + ", ".join(sorted({runs[r]['model'] for r in missing})) + how + "."]
    return "\n".join(lines) + "\n"
