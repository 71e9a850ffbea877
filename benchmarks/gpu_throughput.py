"""Throughput of the three network engines at the paper scale, against the card's peak (issue 46's baseline).

    python3 benchmarks/gpu_throughput.py --record             # on a GPU machine: every workload, ~6 min on an H200
    python benchmarks/gpu_throughput.py --tiny                # any CPU, tiny sizes, seconds (tests/benchmarks)

Each workload is one paper-scale run of the pipeline's own run table (config/, scale paper), built by its
engine exactly as `execute_run` builds it (Engine.setup, Setup.start, Trainer.advance), on synthetic inputs
of the run's real shapes and sizes (a step's cost does not depend on pixel values; the devices' partition,
minibatches and trace are the run's own):
- fedcluster_10: FedCluster, M = 10, CIFAR-10 AlexNet: 10 clients per cycle, 10 cycles a round;
- fedcluster_100: FedAvg on the same: 100 clients per round;
- defedavg_fmnist, defedavg_cifar10: DeFedAvg-IID with the paper CNNs (n = 10), every round that closes in
  one window of the simulated clock, (`--window`, 2 `--window`] seconds, after the rounds of the first window
  untimed (CUDA graph captures: one per batch shape of the client layer);
- tdcd_cifar10, tdcd_modelnet: TDCD, ResNet-18 silos (the smaller K, Q = 10), `--iterations` (20) local iterations
  after one round of Q untimed iterations (whose FLOPs are counted: a round start's work is shared by Q), or after
  one untimed iteration where a record of the workload at the same size (`--flops-from`, the committed records)
  already gives the FLOPs of a client-step (keep `--iterations` a multiple of Q: the round starts it times are then
  the run's share);
- named only (not in the default set): the other TDCD run classes, tdcd_cifar10_q1 (Q = 1), tdcd_cifar10_k100
  (K = 100), tdcd_modelnet_k20 (K = 20) and tdcd_mimic (LSTM silos, N = 4, K = 20, Q = 10, on inputs of MIMIC-III
  IHM's shape: the same whether the run table has the real data or its synthetic stand-in).
Per workload it prints the timed client-steps per second (a client-step: one local step of one client on its
minibatch; TDCD: of one client of one silo), the achieved TFLOP/s of training (the FLOPs of one client-step,
counted by torch.utils.flop_counter on the module's forward and backward at the run's batch, times the rate)
against the card's fp32 peak (and TF32's, when TF32 is on), and the seconds of one evaluation (for TDCD, whose
inputs here are a few hundred IDs, also scaled to the run's whole evaluation sets: `eval_seconds_full`). The float
settings in effect (TF32, cuDNN) are printed first: they decide the floats and the speed.

Candidates for a faster GPU path, measured side by side with the baseline in one session: `--processes K` runs
each workload in K processes at once on the device (several runs a GPU) and sums their rates; `--grouped-on-cuda`
sends the conv nets' clients through nn/convnets.py's grouped channels_last convolutions instead of vmap(grad);
`--silo-backend vectorized` trains TDCD's BatchNorm clients of a silo as one vmapped computation
(nn/batchnorm_silo.py) instead of the loop; `--tf32 off`. The FedCluster workloads, whose runs evaluate every round,
also time `--rounds` rounds each after an evaluation, then as many with each evaluation on a side stream beside the
next round (engines/federated_nn.py OVERLAPPED_EVALUATION), in the same process: `evaluated_rounds`. `--profile ROWS` prints torch.profiler's top kernels of
one more round.

`--out DIR` writes each workload's result, as soon as it is measured, to a file of its own,
DIR/records/[STEP-]WORKLOAD.json (`--step STEP`; written to a temporary file, then renamed, never over another
file): a process killed by a time limit leaves every result it finished (benchmarks/gpu_session.sh).

`--merge DIR` measures nothing: it appends the records a session kept (DIR/*.json with `"recorded": true`, the
session's OUT/records) to the committed records, the rates `fedrepro cost --gpus N --gpu CARD` reads
(results/gpu_cost.py merge_records).

`--tiny` keeps the same runs but shrinks their sizes (devices, samples, steps, image side) so that the CPU runs
every workload in seconds: a test runs it so the script cannot rot. Its numbers say nothing about speed.
Results, with their card: docs/performance.md, "The paper scale on a GPU".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import multiprocessing
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from fedrepro.data.views import make_view
from fedrepro.engines import ENGINES
from fedrepro.engines.context import RunContext, pin_float_settings, resolve_device
from fedrepro.errors import ResultsError
from fedrepro.experiments.provenance import float_settings, git_state
from fedrepro.results.gpu_cost import RECORDS, merge_records
from fedrepro.models import build_model
from fedrepro.nn import LocalTrainer
from fedrepro.nn.gradients import GROUPED_DEVICES
from fedrepro.nn.losses import CROSS_ENTROPY
from fedrepro.validate import load_and_validate

sys.path.insert(0, str(Path(__file__).parent))
from cost_tdcd import SHAPES, SIZES  # noqa: E402  (the TDCD datasets' sizes and input shapes at the paper scale)

# Dense peaks in TFLOP/s (NVIDIA's data sheets, SXM parts): fp32 on the CUDA cores, TF32 on the tensor cores.
PEAKS = {"H100": {"fp32": 67.0, "tf32": 494.7}, "H200": {"fp32": 67.0, "tf32": 494.7},
         "A100": {"fp32": 19.5, "tf32": 156.0}}
# The raw images each synthetic dataset stands for: (train, test) sizes and one image's uint8 shape.
IMAGES = {"cifar10": ((50000, 10000), (32, 32, 3)), "fashion_mnist": ((60000, 10000), (28, 28)),
          "mnist": ((60000, 10000), (28, 28))}


@dataclass(frozen=True)
class Workload:
    paper: str
    match: dict[str, Any]  # the run: the first of the paper's runs at the scale whose spec has these values
    unit: str = "round"  # what one advance() is
    tiny: dict[str, Any] = field(default_factory=dict)  # --tiny: the spec's values changed


WORKLOADS = {
    "fedcluster_10": Workload("fedcluster", {"dataset": "cifar10", "algorithm": "fedcluster", "M": 10,
                                             "local_opt": "sgd", "rho_device": 0.1},
                              tiny={"n_devices": 20, "samples_per_device": 40, "E": 2, "B": 4, "M": 2}),
    "fedcluster_100": Workload("fedcluster", {"dataset": "cifar10", "algorithm": "fedavg", "local_opt": "sgd",
                                              "rho_device": 0.1},
                               tiny={"n_devices": 20, "samples_per_device": 40, "E": 2, "B": 4}),
    "defedavg_fmnist": Workload("defedavg", {"dataset": "fashion_mnist", "algorithm": "defedavg_iid",
                                             "partition": "iid", "n": 10},
                                tiny={"n_clients": 8, "samples_per_client": 40, "K": 2, "n": 2}),
    "defedavg_cifar10": Workload("defedavg", {"dataset": "cifar10", "algorithm": "defedavg_iid", "partition": "iid",
                                              "n": 10},
                                 tiny={"n_clients": 8, "samples_per_client": 40, "K": 2, "n": 2}),
    "tdcd_cifar10": Workload("tdcd", {"model": "resnet18_cifar", "K": 50, "Q": 10}, unit="iteration",
                             tiny={"K": 2, "B": 8, "Q": 1}),
    "tdcd_modelnet": Workload("tdcd", {"model": "resnet18_imagenet", "K": 10, "Q": 10}, unit="iteration",
                              tiny={"K": 2, "B": 16, "Q": 1, "image_side": 32}),
    # TDCD's other run classes, measured by name only
    "tdcd_cifar10_q1": Workload("tdcd", {"model": "resnet18_cifar", "K": 50, "Q": 1}, unit="iteration",
                                tiny={"K": 2, "B": 8, "Q": 1}),
    "tdcd_cifar10_k100": Workload("tdcd", {"model": "resnet18_cifar", "K": 100, "Q": 10}, unit="iteration",
                                  tiny={"K": 3, "B": 8, "Q": 1}),
    "tdcd_modelnet_k20": Workload("tdcd", {"model": "resnet18_imagenet", "K": 20, "Q": 10}, unit="iteration",
                                  tiny={"K": 3, "B": 16, "Q": 1, "image_side": 32}),
    "tdcd_mimic": Workload("tdcd", {"model": "lstm", "N": 4, "K": 20, "Q": 10}, unit="iteration",
                           tiny={"K": 2, "B": 8, "Q": 1}),
}
DEFAULT = ["fedcluster_10", "fedcluster_100", "defedavg_fmnist", "defedavg_cifar10", "tdcd_cifar10", "tdcd_modelnet"]
# the run's settings a record names (its `run`): those but the silo backend fix a client-step's FLOPs
RUN_KEYS = ("dataset", "algorithm", "model", "backend", "M", "N", "K", "Q", "E", "B", "n", "view")


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def find_run(runs: list[dict[str, Any]], w: Workload) -> dict[str, Any]:
    for spec in runs:
        if spec["paper"] == w.paper and all(spec.get(k) == v for k, v in w.match.items()):
            return spec
    raise SystemExit(f"no {w.paper} run at this scale has {w.match}")


def image_arrays(spec: dict[str, Any], sizes: tuple[int, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Synthetic raw images of the dataset's shape through the run's own view (data/views.py)."""
    rng = np.random.default_rng(seed)
    (_, shape), classes = IMAGES[spec["dataset"]], spec["n_classes"]
    raw = {f"x_{s}": rng.integers(0, 256, (n, *shape), dtype=np.uint8) for s, n in zip(("train", "test"), sizes)}
    raw |= {f"y_{s}": rng.integers(0, classes, n).astype(np.int64) for s, n in zip(("train", "test"), sizes)}
    return make_view(raw, spec["view"])


def vertical_arrays(spec: dict[str, Any], n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Synthetic inputs of a TDCD run's shape (as benchmarks/cost_tdcd.py builds them): n IDs, n test samples. The
    12-view renders are uint8, as the runs read them (kept uint8 on the device, standardised a batch at a time)."""
    rng = np.random.default_rng(seed)
    if "12view" in spec["dataset"]:  # the 12-view renders, (12, C, S, S)
        shape = (12, spec["image_channels"], spec["image_side"], spec["image_side"])
        inputs = lambda m: rng.integers(0, 256, (m, *shape), dtype=np.uint8)  # noqa: E731
    else:  # CIFAR-10's images, MIMIC-III IHM's 48 hours x 76 features
        shape = SHAPES[spec["dataset"]]
        inputs = lambda m: rng.standard_normal((m, *shape), dtype=np.float32)  # noqa: E731
    classes = 2 if spec["out_dim"] == 1 else spec["out_dim"]  # one output: binary labels
    labels = lambda m: rng.integers(0, classes, m)  # noqa: E731
    return {"x_train": inputs(n), "y_train": labels(n), "x_test": inputs(n), "y_test": labels(n)}


@contextlib.contextmanager
def counted_client_steps() -> Iterator[list[int]]:
    """Counts the client-steps LocalTrainer.run computes (D clients x E steps a call) while it is open."""
    count, run = [0], LocalTrainer.run

    def counting(self, W, idx, extra=()):
        count[0] += idx.shape[0] * idx.shape[1]
        return run(self, W, idx, extra)

    LocalTrainer.run = counting
    try:
        yield count
    finally:
        LocalTrainer.run = run


def step_flops(spec: dict[str, Any], shape: tuple[int, ...], device: str) -> float:
    """FLOPs of one client-step of an image engine's run: forward and backward of its model on B samples."""
    model = build_model(spec["model"], shape, spec["n_classes"]).to(device)
    x = torch.randn(spec["B"], *shape, device=device)
    y = torch.randint(0, spec["n_classes"], (spec["B"],), device=device)
    with FlopCounterMode(display=False) as counter:
        CROSS_ENTROPY.value(model(x), y).backward()
    return float(counter.get_total_flops())


def known_flops(path: Path | None, name: str, run: dict[str, Any]) -> float | None:
    """FLOPs of one client-step of this workload at this size, from the newest record of it at `path` (the same
    workload and run settings; the silo backend, which computes the same operations, aside), else None."""
    if path is None or not path.is_file():
        return None

    def size(settings: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in settings.items() if k != "backend"}

    flops = None
    for line in path.read_text().splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("workload") == name and size(record.get("run", {})) == size(run):
            flops = float(record["flops_per_client_step"])
    return flops


def build(name: str, w: Workload, spec: dict[str, Any], args, device: str):
    """The run's trainer of seed 0, as execute_run builds it, on synthetic inputs; its spec as changed here; and how
    many times the samples of one evaluation of the whole run its evaluation here covers (TDCD: fewer)."""
    spec = {**spec, **(w.tiny if args.tiny else {})}
    if w.paper == "tdcd":  # only the minibatch is touched: a few IDs stand for the rest (as cost_tdcd.py)
        spec |= {"train_subset": None, "test_subset": None, "backend": args.silo_backend}
        n = max(spec["B"], 32 if args.tiny else 512)
        arrays = vertical_arrays(spec, n)
        n_train, n_test = SIZES[spec["dataset"]]
        eval_scale = ((spec.get("train_eval_subsample") or n_train) + (spec.get("test_eval_subsample") or n_test)) / (2 * n)
    else:
        if w.paper == "defedavg":
            spec |= {"time_horizon": 2 * args.window}
        arrays = image_arrays(spec, (2000, 200) if args.tiny else IMAGES[spec["dataset"]][0])
        eval_scale = 1.0
    ctx = RunContext(f"bench-{name}", spec, device, Path("/nonexistent/checkpoint.pt"), logging.getLogger(name),
                     show_progress=False)
    setup = ENGINES[spec["engine"]].setup(spec, arrays, ctx)
    return setup, setup.start([0]), spec, eval_scale


def measure(name: str, w: Workload, spec: dict[str, Any], args, device: str, barrier=None) -> dict[str, Any]:
    """One workload's rates. With `barrier` (several processes at once), its timed part starts when every
    process has warmed up."""
    setup, trainer, spec, eval_scale = build(name, w, spec, args, device)
    run = {k: spec.get(k) for k in RUN_KEYS if spec.get(k) is not None}
    flops = known_flops(args.flops_from, name, run)
    flops_from = "counted" if flops is None else "records"
    if w.paper == "tdcd" and flops is not None:  # one iteration untimed: its first kernels, allocations
        trainer.advance(0)
        warm, timed = 1, args.iterations
    elif w.paper == "tdcd":  # one round of Q iterations untimed, its FLOPs counted (a round start's work is shared)
        with FlopCounterMode(display=False) as counter:
            for r in range(spec["Q"]):
                trainer.advance(r)
        flops = counter.get_total_flops() / (spec["Q"] * spec["N"] * spec["K"])
        warm, timed = spec["Q"], args.iterations
    else:
        if flops is None:
            flops = step_flops(spec, tuple(setup.env.images.shape[1:]), device)
        if w.paper == "defedavg":  # the rounds of the first window untimed, those of the second timed
            closes = trainer.trace.close_time
            warm = int(np.searchsorted(closes, args.window, side="right"))
            timed = int(trainer.trace.n_rounds) - warm
        else:
            warm, timed = 1, args.rounds
        for r in range(warm):
            trainer.advance(r)
    # the profile's rounds: one more, or the async trainer's last fifth (a round there may only aggregate)
    profiled = 0 if not args.profile else max(1, timed // 5) if w.paper == "defedavg" else 1
    timed -= profiled if w.paper == "defedavg" else 0
    sync(device)
    if barrier is not None:
        barrier.wait()
    with counted_client_steps() as count:
        t0 = time.perf_counter()
        for r in range(warm, warm + timed):
            trainer.advance(r)
        sync(device)
        seconds = time.perf_counter() - t0
    steps = timed * spec["N"] * spec["K"] if w.paper == "tdcd" else count[0]
    if profiled:
        profile(trainer, range(warm + timed, warm + timed + profiled), device, args.profile)
    t0 = time.perf_counter()
    trainer.evaluate(warm + timed + profiled)
    sync(device)
    eval_seconds = time.perf_counter() - t0
    rate = steps / seconds
    result = {"workload": name, "run": run,
              "advances": timed, "unit": w.unit, "seconds": seconds, "client_steps": steps,
              "client_steps_per_s": rate, "us_per_client_step": 1e6 / rate, "flops_per_client_step": flops,
              "flops_from": flops_from,
              "tflops": rate * flops / 1e12, "eval_seconds": eval_seconds,
              "eval_seconds_full": eval_seconds * eval_scale}
    if w.paper == "fedcluster":  # its runs evaluate every round: serial, then beside the next round
        first = warm + timed + profiled
        result["evaluated_rounds"] = {mode: rounds_evaluated(trainer, range(first + 2 * i * args.rounds,
                                                                            first + (2 * i + 1) * args.rounds),
                                                             mode == "overlapped", device)
                                      for i, mode in enumerate(("serial", "overlapped"))}
    return result


def rounds_evaluated(trainer, rounds: range, overlapped: bool, device: str) -> float:
    """Seconds of these rounds, each after an evaluation, as the driver runs them at eval_every = 1: each
    evaluation's rows read before the next round, or `overlapped` (federated_nn OVERLAPPED_EVALUATION) read after it,
    the evaluation on a side stream beside it."""
    trainer.overlaps_evaluation = overlapped
    sync(device)
    t0 = time.perf_counter()
    for r in rounds:
        pending = trainer.launch_evaluation(r)
        if not overlapped:
            pending()
        trainer.advance(r)
        if overlapped:
            pending()
    sync(device)
    return time.perf_counter() - t0


def profile(trainer, rounds: range, device: str, rows: int) -> None:
    """The top kernels (by self time on the device) of these rounds, torch.profiler's table."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with profiler(activities=activities) as prof:
        for r in rounds:
            trainer.advance(r)
        sync(device)
    key = "self_cuda_time_total" if device.startswith("cuda") else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=60), flush=True)


def peak(device: str) -> dict[str, float]:
    if not device.startswith("cuda"):
        return {}
    name = torch.cuda.get_device_name()
    return next((p for card, p in PEAKS.items() if card in name), {})


def configure(args) -> None:
    """The float settings and client-layer path the measurement runs under (in each process)."""
    torch.set_num_threads(1)
    pin_float_settings()  # what every run trains under
    if args.tf32 == "off":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    if args.grouped_on_cuda:
        GROUPED_DEVICES.add("cuda")


def paper_runs() -> list[dict[str, Any]]:
    _, table = load_and_validate({"scale": "paper"}, Path("config"))
    return list(table.runs.values())


def _one_of_several(name: str, args, device: str, barrier, queue) -> None:
    configure(args)
    queue.put(measure(name, WORKLOADS[name], find_run(paper_runs(), WORKLOADS[name]), args, device, barrier))


def measure_together(name: str, args, device: str) -> dict[str, Any]:
    """The workload in `args.processes` processes at once on the device (several runs a GPU, as a scheduler that
    shares it would place them): their client-steps summed over the slowest one's timed seconds."""
    context = multiprocessing.get_context("spawn")
    barrier, queue = context.Barrier(args.processes), context.Queue()
    workers = [context.Process(target=_one_of_several, args=(name, args, device, barrier, queue))
               for _ in range(args.processes)]
    for worker in workers:
        worker.start()
    parts = [queue.get() for _ in workers]
    for worker in workers:
        worker.join()
    steps, seconds = sum(r["client_steps"] for r in parts), max(r["seconds"] for r in parts)
    rate = steps / seconds
    return {**parts[0], "processes": args.processes, "client_steps": steps, "seconds": seconds,
            "client_steps_per_s": rate, "us_per_client_step": 1e6 / rate,
            "tflops": rate * parts[0]["flops_per_client_step"] / 1e12}


def write_record(out: Path, step: str | None, record: dict[str, Any]) -> Path:
    """The record in a file of its own, OUT/records/[STEP-]WORKLOAD.json, whole or not at all (a temporary file
    renamed): a command killed by its time limit leaves every record written before. An existing file is kept
    (the next free NAME.2.json, .3, ... is taken)."""
    folder = out / "records"
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{step}-{record['workload']}" if step else record["workload"]
    path, i = folder / f"{stem}.json", 1
    while path.exists():
        i += 1
        path = folder / f"{stem}.{i}.json"
    tmp = folder / f".{path.name}.tmp"
    tmp.write_text(json.dumps(record) + "\n")  # one line: `cat` the files for JSON lines
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=DEFAULT,
                   help=f"default: {' '.join(DEFAULT)}")
    p.add_argument("--device", default="auto")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds of the FedCluster workloads (after one warm-up)")
    p.add_argument("--window", type=float, default=5.0, help="DeFedAvg: simulated seconds of the trace timed")
    p.add_argument("--iterations", type=int, default=20, help="TDCD: timed local iterations (a multiple of Q)")
    p.add_argument("--tiny", action="store_true", help="tiny sizes for a CPU (a test): the numbers mean nothing")
    p.add_argument("--tf32", choices=("default", "off"), default="default",
                   help="off: no TF32 in matmuls or cuDNN (runs have it on in cuDNN's convolutions: FLOAT_SETTINGS)")
    p.add_argument("--grouped-on-cuda", action="store_true",
                   help="conv nets' clients as one grouped convolution in channels_last on CUDA too (nn/convnets.py), "
                   "not vmap(grad)")
    p.add_argument("--silo-backend", choices=("auto", "loop", "vectorized"), default="auto",
                   help="TDCD's silos: vectorized runs the ResNets' BatchNorm clients as one vmapped computation "
                   "(nn/batchnorm_silo.py) instead of the loop that auto picks for them")
    p.add_argument("--processes", type=int, default=1,
                   help="run each workload in this many processes at once on the device and sum their rates")
    p.add_argument("--profile", type=int, default=0, metavar="ROWS",
                   help="also print the top ROWS kernels of one more round (torch.profiler)")
    p.add_argument("--record", action="store_true",
                   help=f"also append the results, dated, to {RECORDS} (the rates `fedrepro cost --gpus` reads)")
    p.add_argument("--out", type=Path, help="also write each result, as soon as measured, to a file of its own: "
                   "OUT/records/[STEP-]WORKLOAD.json")
    p.add_argument("--step", help="the session step these results belong to: their files' prefix, and `step` in them")
    p.add_argument("--flops-from", type=Path, default=RECORDS, metavar="JSONL",
                   help="take a client-step's FLOPs from the newest record of the workload at the same size in these "
                   "records (default: %(default)s; a missing file: count them), so TDCD skips its counted round")
    p.add_argument("--merge", type=Path, metavar="DIR", help=f"measure nothing: append the kept records of a session's "
                   f"DIR/*.json (gpu_session.sh's OUT/records) to {RECORDS}")
    args = p.parse_args(argv)
    if args.merge:
        try:
            added = merge_records(args.merge, RECORDS)
        except ResultsError as err:
            p.error(str(err))
        print(f"{RECORDS}: {len(added)} records added" + "".join(f"\n  {a}" for a in added))
        return []
    if args.record and args.tiny:
        p.error("--record keeps paper-scale rates; --tiny measures nothing worth keeping")
    device = resolve_device(args.device)
    if args.tiny:
        args.rounds, args.window, args.iterations = 1, 0.2, 1
    if args.processes > 1 and args.profile:
        p.error("--profile profiles one process; leave it out with --processes")
    configure(args)
    runs = paper_runs()
    card = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    peaks, settings = peak(device), float_settings()
    print(f"torch {torch.__version__}, device {device} ({card}), float settings {json.dumps(settings)}")
    print(f"peak TFLOP/s (dense, data sheet): {peaks or 'unknown for this device'}", flush=True)
    results = []
    for name in args.workloads:
        w = WORKLOADS[name]
        if args.processes > 1:
            r = measure_together(name, args, device)
        else:
            r = measure(name, w, find_run(runs, w), args, device)
        r |= {"date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": git_state(Path("."))["commit"],
              "processes": args.processes, "grouped_on_cuda": args.grouped_on_cuda,
              "torch": torch.__version__, "device": device, "card": card, "float_settings": settings}
        shares = "".join(f", {r['tflops'] / v:.1%} of {k} peak" for k, v in peaks.items()
                         if k == "fp32" or settings.get("cudnn_allow_tf32") or settings.get("matmul_allow_tf32"))
        together = f" x{args.processes} processes" if args.processes > 1 else ""
        print(f"{name:16s}{together} {r['client_steps']:>8d} client-steps in {r['advances']} {w.unit}s, {r['seconds']:7.2f} s: "
              f"{r['client_steps_per_s']:9.1f} client-steps/s ({r['us_per_client_step']:8.1f} us each), "
              f"{r['flops_per_client_step'] / 1e9:7.3f} GFLOP each -> {r['tflops']:6.2f} TFLOP/s{shares}; "
              f"one evaluation {r['eval_seconds']:6.2f} s  {r['run']}", flush=True)
        if "evaluated_rounds" in r:
            serial, overlapped = r["evaluated_rounds"]["serial"], r["evaluated_rounds"]["overlapped"]
            print(f"{'':16s} {args.rounds} rounds each after an evaluation: {serial:7.2f} s serial, {overlapped:7.2f} s "
                  f"with the evaluation beside the next round ({serial / overlapped:.2f}x)", flush=True)
        results.append(r)
        if args.out:  # (`recorded`: the lines to append to the committed records, whose copy on a device is lost)
            write_record(args.out, args.step, {**r, "step": args.step, "recorded": args.record})
        if args.record:
            RECORDS.parent.mkdir(parents=True, exist_ok=True)
            with open(RECORDS, "a") as f:
                f.write(json.dumps(r) + "\n")
    return results


if __name__ == "__main__":
    main()
