"""What a scale's network runs cost on GPUs, from measured rates: `fedrepro cost --scale paper --gpus N --gpu CARD`.

The rates are benchmarks/gpu_throughput.py's records (RECORDS: one JSON line per workload and session, each with
its card; the newest of each workload is used). A table is priced from one card's records only (`--gpu`, by default
the one card on record): two cards' seconds never add up in one figure. A run's work is counted from its spec, as its
engine would do it:
- federated_nn: round(frac x n_devices) clients x E steps a round (FedCluster's M cycles activate as many as
  FedAvg's one), at FedCluster's rate (10 clients a call) or FedAvg's (100); centralized SGD's steps of
  `csgd_batch` samples count as that many samples' worth of B-sample client-steps at FedAvg's rate (not measured);
- async: the client-steps of the run's own timing trace (only consumed trainings are computed), counted on the
  first TRACE_SHARE of its horizon (or rounds) and scaled up: 3.008 G against the whole traces' 3.021 G at the
  paper scale (0.4%; each run within 5%, counted 2026-11-27 on every sixth run), in 6 s rather than 4 min;
- vertical: N silos x K clients a local iteration; MIMIC's LSTM silos have no measured rate. A run of another K or
  Q than its record's is priced from the record by what its iteration's time follows (TDCD, tdcd_seconds).
Evaluations: one per the run's cadence, at the benchmark's measured seconds (`eval_seconds_full`: TDCD's scaled
from the benchmark's few hundred IDs to the run's evaluation sets).
A run's job trains its seeds one after another, or with `--seed-workers K` (config `seed_workers`) K at once in
waves, each seed at 1/K of the rate K processes together reach on one GPU (the benchmark's `--processes K` records;
a workload measured only alone has no price at K). Jobs (one a run, `--gpus=1` each, as profiles/slurm submits
them; a run longer than a cluster job's MAX_JOB_MINUTES goes on from its checkpoint in the next, one after another)
are packed onto N GPUs longest first, which gives the wall time.
"""

from __future__ import annotations

import functools
import heapq
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrepro.engines import ENGINES
from fedrepro.engines.asynchronous import trace_of
from fedrepro.engines.context import FLOAT_SETTINGS
from fedrepro.engines.contract import MAX_JOB_MINUTES
from fedrepro.errors import ResultsError

RECORDS = Path("benchmarks/records/gpu_throughput.jsonl")
TRACE_SHARE = 0.02
MIN_ROUNDS = 50  # a run of rounds whose share has fewer is counted whole
# the benchmark's workload whose rate stands for a run, by (engine, algorithm or dataset)
FEDCLUSTER = {"fedcluster": "fedcluster_10", "fedavg": "fedcluster_100", "csgd": "fedcluster_100"}
DEFEDAVG = {"fashion_mnist": "defedavg_fmnist", "cifar10": "defedavg_cifar10"}
# TDCD's: the record standing for a model's runs, and what a run's iteration time follows where its K differs from
# the record's. Every client of a silo steps on the IDs of the round's B that it owns (algorithms/tdcd.py), so K splits
# the same samples into K calls. CIFAR-10's iteration is bound by Python and kernel launches, one set a client-step
# (the device busy 0.42 s of a 1.6 s iteration): its time follows the client-steps, N x K. ModelNet's 224-px views
# keep the device busy (48% of fp32 peak): its time follows the samples, N x B, whatever K (docs/performance.md, "What
# limits each engine").
TDCD = {"resnet18_cifar": ("tdcd_cifar10", "client_steps"), "resnet18_imagenet": ("tdcd_modelnet", "samples")}
# A TDCD round's exchange (each silo's forward of the round's B IDs, algorithms/tdcd.py _start_round) against one
# local iteration's forward and backward of the same samples: a third of its work. It comes once in Q iterations, so
# a Q = 1 run pays it every iteration, where the Q = 10 record pays it every tenth.
EXCHANGE_SHARE = 1 / 3


@dataclass(frozen=True)
class RunCost:
    run_id: str
    paper: str
    workload: str | None  # None: no measured rate stands for this run
    client_steps: float  # all seeds
    evaluations: int  # all seeds
    seconds: float  # nan without a rate
    limit_minutes: int  # the runtime its cluster jobs ask for together (Engine.runtime_minutes)


def card_name(name: str) -> str:
    """A card's short name, lower case, as `--gpu` takes it and records are matched: "NVIDIA H200" and "h200" ->
    "h200", "NVIDIA H100 80GB HBM3" -> "h100"; a name without a model number as written, lower case ("cpu")."""
    found = re.search(r"\b[a-z]\d{2,4}\b", name.lower())
    return found.group(0) if found else name.lower().removeprefix("nvidia ").strip()


def _records(path: Path) -> list[dict[str, Any]]:
    """The file's records, oldest first, of the runs' own path (_the_runs_own_path)."""
    if not path.is_file():
        raise ResultsError(f"{path}: no GPU rates recorded; run benchmarks/gpu_throughput.py --record on a GPU")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if _the_runs_own_path(r)]


def load_rates(path: Path | None = None, processes: int = 1, card: str | None = None) -> dict[str, dict[str, Any]]:
    """The newest record of each workload measured on `card` (default: the one card on record) in `processes`
    processes at once on one GPU, on the path the runs train on (the file is appended to, one line per workload and
    session; a record without `processes` ran alone). Never two cards' records: a card without any is refused."""
    path = path or RECORDS
    records = _records(path)
    cards = sorted({card_name(r["card"]) for r in records})
    if card is None and len(cards) > 1:
        raise ResultsError(f"{path}: rates on record for {', '.join(cards)}: choose one card (--gpu)")
    card = card_name(card) if card else (cards[0] if cards else "")
    if card not in cards:
        raise ResultsError(f"{path}: no GPU rates recorded on {card or 'any card'} (on record: "
                           f"{', '.join(cards) or 'none'}); measure them there (benchmarks/gpu_session.sh) and merge "
                           f"its records (benchmarks/gpu_throughput.py --merge OUT)")
    return {r["workload"]: r for r in records if card_name(r["card"]) == card and r.get("processes", 1) == processes}


def recorded_cards(path: Path | None = None) -> list[str]:
    """The cards with rates on record (card_name), in name order."""
    return sorted({card_name(r["card"]) for r in _records(path or RECORDS)})


def rates_card(rates: dict[str, dict[str, Any]], card: str = "") -> str:
    """The card `rates` were measured on, as a table says it ("H200"; `card` where there are none); rates of two
    cards are refused: their seconds would add different GPUs' times."""
    cards = sorted({card_name(r["card"]) for r in rates.values()}) or [card_name(card or "gpu")]
    if len(cards) > 1:
        raise ResultsError(f"rates of {' and '.join(cards)} in one table: price from one card's records (--gpu)")
    return cards[0].upper()


def merge_records(folder: Path, path: Path | None = None) -> list[str]:
    """Append to the records file the records a GPU session kept (benchmarks/gpu_session.sh: folder/*.json, one
    file a record, `"recorded": true` where its step ran with --record), in file name order, without their session
    fields (`step`, `recorded`); a record already in the file is not added again. Returns "WORKLOAD (card)" for each
    added."""
    path = path or RECORDS
    files = sorted(folder.glob("*.json"))
    if not files:
        raise ResultsError(f"{folder}: no record files (*.json) to merge: give the session's OUT/records folder")
    known = {line.strip() for line in path.read_text().splitlines()} if path.is_file() else set()
    added, lines = [], []
    for file in files:
        record = json.loads(file.read_text())
        if not record.get("recorded"):
            continue
        if "card" not in record:
            raise ResultsError(f"{file}: a record without its card cannot price anything")
        line = json.dumps({k: v for k, v in record.items() if k not in ("step", "recorded")})
        if line not in known:
            known.add(line)
            lines.append(line)
            added.append(f"{record['workload']} ({record['card']})")
    if lines:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write("".join(line + "\n" for line in lines))
    return added


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


@functools.lru_cache(maxsize=None)
def _trace_steps(spec_json: str) -> float:
    """_async_steps of a spec (as sorted JSON): counted once for every card's table (fedrepro docs)."""
    return _async_steps(json.loads(spec_json))


def run_work(spec: dict[str, Any]) -> tuple[str | None, float]:
    """(the workload whose rate stands for the run, or None; client-steps of one seed)."""
    engine = spec["engine"]
    if engine == "federated_nn":  # (centralized SGD's samples a round are FedAvg's: algorithms/fedcluster.py)
        return FEDCLUSTER[spec["algorithm"]], float(round(spec["frac"] * spec["n_devices"]) * spec["E"] * spec["rounds"])
    if engine == "async":
        return DEFEDAVG.get(spec["dataset"]), _trace_steps(json.dumps(spec, sort_keys=True))
    if engine == "vertical":
        return TDCD.get(spec["model"], (None,))[0], float(spec["iterations"] * spec["N"] * spec["K"])
    return None, 0.0  # the CPU engines


def tdcd_seconds(spec: dict[str, Any], rate: dict[str, Any]) -> float:
    """Seconds of one client-step of a TDCD run at its record's `rate`, measured at the record's K and Q: scaled by
    the samples of a client-step where the model's iteration time follows the samples (TDCD), and by the share of
    the round's exchange that an iteration carries, (1 + EXCHANGE_SHARE / Q) against the record's."""
    measured = rate["run"]
    seconds = 1 / rate["client_steps_per_s"]
    if TDCD[spec["model"]][1] == "samples":
        seconds *= (spec["B"] / spec["K"]) / (measured["B"] / measured["K"])
    return seconds * (1 + EXCHANGE_SHARE / spec["Q"]) / (1 + EXCHANGE_SHARE / measured["Q"])


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
        step_seconds = tdcd_seconds(spec, rate) if spec["engine"] == "vertical" else 1 / rate["client_steps_per_s"]
        seed_seconds = steps * seed_workers * step_seconds + per_seed * rate["eval_seconds_full"]
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


def paper_costs(runs: dict[str, dict[str, Any]], rates: dict[str, dict[str, Any]],
                card: str = "") -> dict[str, PaperCost]:
    """Each paper's network runs priced at `rates`, one card's (rates_card; `card` names it where there are none):
    the figures the README and the paper pages quote (paper_docs.py)."""
    label = rates_card(rates, card)
    costs = [run_cost(rid, spec, rates, 1) for rid, spec in runs.items() if ENGINES[spec["engine"]].trains_networks]
    found = {}
    for paper in sorted({c.paper for c in costs}):
        mine = [c for c in costs if c.paper == paper]
        timed = [c for c in mine if c.workload]
        found[paper] = PaperCost(len(mine), len(timed), sum(c.seconds for c in timed) / 3600, label,
                                 tuple(sorted({runs[c.run_id]["seeds"] for c in mine})),
                                 tuple(sorted({runs[c.run_id]["model"] for c in mine if not c.workload})))
    return found


def cluster_jobs(seconds: float) -> int:
    """The cluster jobs a run of these seconds takes, each at most MAX_JOB_MINUTES, each going on from the last
    one's checkpoint."""
    return math.ceil(seconds / (60 * MAX_JOB_MINUTES))


def gpu_plan(runs: dict[str, dict[str, Any]], gpus: int, rates: dict[str, dict[str, Any]], seed_workers: int = 1,
             card: str = "", level: int = 2) -> str:
    """Markdown under a heading of `level`: per paper, the runs, client-steps, GPU-hours and wall time on `gpus` GPUs
    of one card (rates_card; `card` names it where there are no rates); the rates used (measured in `seed_workers`
    processes at once: load_rates)."""
    label = rates_card(rates, card)
    costs = [run_cost(rid, spec, rates, seed_workers) for rid, spec in runs.items()
             if ENGINES[spec["engine"]].trains_networks]
    at_once = f", {seed_workers} seeds at once" if seed_workers > 1 else ""
    job_hours = MAX_JOB_MINUTES // 60
    lines = [f"{'#' * level} GPU plan: {gpus} {label} GPU{'s' * (gpus > 1)}, one job at a time per run (`--gpus=1`, "
             f"profiles/slurm; a run past {job_hours} h goes on from its checkpoint in its next job){at_once}", "",
             f"| paper | runs | runs with a measured rate | client-steps (G) | {label}-hours | wall on "
             f"{gpus} GPU{'s' * (gpus > 1)} (h) | longest run (h) | cluster jobs of at most {job_hours} h | runs over "
             "their runtime request |",
             "|---|---|---|---|---|---|---|---|---|"]
    for paper in sorted({c.paper for c in costs}):
        mine = [c for c in costs if c.paper == paper]
        timed = [c for c in mine if c.workload]
        paper_hours = sum(c.seconds for c in timed) / 3600
        over = sum(c.seconds / 60 > c.limit_minutes for c in timed)
        wall = makespan([c.seconds for c in timed], gpus) / 3600 if timed else float("nan")
        longest = max((c.seconds for c in timed), default=float("nan")) / 3600
        jobs = sum(cluster_jobs(c.seconds) for c in timed)
        lines.append(f"| {paper} | {len(mine)} | {len(timed)} | {sum(c.client_steps for c in mine) / 1e9:.3f} | "
                     f"{paper_hours:.1f} | {wall:.2f} | {longest:.2f} | {jobs} | {over} |")
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
