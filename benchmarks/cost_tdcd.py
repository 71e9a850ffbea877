"""What the TDCD paper scale costs: every run's local iterations and evaluations (from the configuration)
times rates measured here, on this machine, for one silo of each run class, through the engine's own
silos (`nn/silos.py`, the backend the run would use).

    PYTHONPATH=src .venv/bin/python benchmarks/cost_tdcd.py [--repeats 2] [--gpu-tflops 20]

Per class (dataset, N, K, B; Q only amortises the round start) it builds the run's environment on random
inputs of the real shapes (B training IDs: only the minibatch is touched) and times, for silo 0:
a round start (hub -> clients, the embedding forward of the minibatch), one local step of all its
clients, and the evaluation forward per sample. Silos of one run have the same shape up to one feature
column, so a run's silo costs are N x silo 0's. A run then costs
    iterations x (step + start / Q) x N  +  evaluations x (train-eval + test samples) x forward x N.
On CUDA the totals are GPU-hours; elsewhere CPU-hours at 1 torch thread, with the floating-point
operations of one iteration counted (torch.utils.flop_counter), from which a GPU estimate follows at an
assumed sustained rate (`--gpu-tflops`, printed as an assumption, never as a measurement).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from fedrepro.engines.context import RunContext
from fedrepro.engines.vertical import VerticalSetup
from fedrepro.validate import load_and_validate

# Full dataset sizes at the paper scale (train, test): CIFAR-10 (data/registry.py), MIMIC-III IHM
# (data/mimic3_ihm.py PAPER_ROWS), ModelNet40 12-view (MVCNN's split; data/synthetic.py write_twelve_view).
SIZES = {"cifar10": (50000, 10000), "mimic3_ihm": (14681, 3236), "synthetic_ihm": (14681, 3236),
         "modelnet40_12view": (9843, 2468), "synthetic_12view": (9843, 2468)}
# The input shape of one sample before the split into silos, per dataset at the paper scale.
SHAPES = {"cifar10": (3, 32, 32), "mimic3_ihm": (48, 76), "synthetic_ihm": (48, 76),
          "modelnet40_12view": (12, 3, 224, 224), "synthetic_12view": (12, 3, 224, 224)}


def _clock(device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def silo_rates(spec: dict, device: str, repeats: int) -> dict[str, float]:
    """Seconds of silo 0: `start` (round start + its embedding), `step` (one local step of its K clients),
    `eval` (forward per sample), and the FLOPs of each (`start_flops`, `step_flops`, `eval_flops`)."""
    shape, B = SHAPES[spec["dataset"]], spec["B"]
    rng = np.random.default_rng(0)
    n = max(B, 256)
    classes = 2 if spec["out_dim"] == 1 else spec["out_dim"]  # one output: binary labels
    labels = lambda m: rng.integers(0, classes, m)  # noqa: E731
    arrays = {"x_train": rng.standard_normal((n, *shape), dtype=np.float32), "y_train": labels(n),
              "x_test": rng.standard_normal((256, *shape), dtype=np.float32), "y_test": labels(256)}
    run = {**spec, "train_subset": None, "test_subset": None, "time_pool": 1}
    ctx = RunContext("cost", run, device, Path("/nonexistent/checkpoint.pt"), logging.getLogger("cost_tdcd"),
                     show_progress=False)
    setup = VerticalSetup(run, arrays, ctx)
    trainer = setup.start([0])
    tdcd, layout = trainer.tdcd, trainer.layouts[0]
    silo, hub, x_test = tdcd.silos[0], tdcd.hubs0[0], setup.env.test[0]
    batch = tdcd.batch_of(0)
    out: dict[str, float] = {"start": np.inf, "step": np.inf, "eval": np.inf}
    for _ in range(repeats):  # the first pass warms up; keep the fastest
        t0 = _clock(device)
        silo.start_round(hub, batch)
        phi = silo.exchange()
        t1 = _clock(device)
        silo.set_others(torch.zeros_like(phi))
        silo.step()
        t2 = _clock(device)
        with torch.no_grad():
            layout.forward(hub, x_test[:256], train=False)
        t3 = _clock(device)
        out = {"start": min(out["start"], t1 - t0), "step": min(out["step"], t2 - t1),
               "eval": min(out["eval"], (t3 - t2) / 256)}
    for part in ("start", "step", "eval"):  # the floating-point operations of each, counted once
        with FlopCounterMode(display=False) as counter:
            if part == "start":
                silo.start_round(hub, batch)
                silo.set_others(torch.zeros_like(silo.exchange()))
            elif part == "step":
                silo.step()
            else:
                with torch.no_grad():
                    layout.forward(hub, x_test[:1], train=False)
        out[f"{part}_flops"] = float(counter.get_total_flops())
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=2, help="timings per class (the fastest is kept)")
    p.add_argument("--gpu-tflops", type=float, default=20.0,
                   help="ASSUMED sustained GPU rate for the FLOP-based estimate (default 20: ~30%% of an H100's fp32)")
    args = p.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(1)
    _, table = load_and_validate({"scale": "paper"}, Path("config"))
    runs = [s for s in table.runs.values() if s["paper"] == "tdcd"]
    rates: dict[tuple, dict[str, float]] = {}
    total_s, total_flops = 0.0, 0.0
    unit = "GPU" if device == "cuda" else "CPU"
    print(f"TDCD paper scale: {len(runs)} runs; rates of silo 0 on {device} (1 thread), x N silos")
    for spec in sorted(runs, key=lambda s: (s["dataset"], s["N"], s["K"], s["Q"])):
        key = (spec["dataset"], spec["N"], spec["K"], spec["B"], spec["model"])
        if key not in rates:
            rates[key] = silo_rates(spec, device, args.repeats)
        r, N, Q, T = rates[key], spec["N"], spec["Q"], spec["iterations"]
        n_train, n_test = SIZES[spec["dataset"]]
        train_eval = spec.get("train_eval_subsample") or spec.get("train_subset") or n_train
        test_eval = spec.get("test_eval_subsample") or spec.get("test_subset") or n_test
        evals = T // spec["eval_every"] + 1
        def cost(kind: str) -> float:  # seconds ("") or FLOPs ("_flops") of the run, all seeds and silos
            return spec["seeds"] * N * (T * (r["step" + kind] + r["start" + kind] / Q)
                                        + evals * (train_eval + test_eval) * r["eval" + kind])

        seconds = cost("")
        total_s += seconds
        total_flops += cost("_flops")
        print(f"  {spec['dataset']:>17} N={N:<2} K={spec['K']:<3} Q={Q:<2} T={T:<5}: step {r['step'] * 1e3:9.1f} ms, "
              f"start {r['start'] * 1e3:9.1f} ms, eval {r['eval'] * 1e6:8.1f} us/sample (silo 0) -> "
              f"{seconds / 3600:8.1f} {unit}-hours")
    print(f"total: {total_s / 3600:.1f} {unit}-hours measured on {device}")
    if device != "cuda":
        print(f"FLOPs (counted, training and evaluation): {total_flops:.3g}; at an ASSUMED sustained "
              f"{args.gpu_tflops:g} TFLOP/s that is {total_flops / args.gpu_tflops / 1e12 / 3600:.1f} GPU-hours "
              f"(an estimate, not a measurement: run this script on CUDA for one)")


if __name__ == "__main__":
    main()
