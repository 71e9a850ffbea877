"""What the DeFedAvg paper scale costs: the client-steps its runs compute, counted from their own timing
traces (only consumed trainings are computed), times a measured rate per client-step of the paper's CNN.

    PYTHONPATH=src .venv/bin/python benchmarks/cost_defedavg.py [--scale paper] [--seed 0] [--rate-only]

Counts one seed of every run of the scale (traces depend on the fleet and the seed only, so other seeds
cost about the same) and multiplies by the run's seeds. The rate is measured here, on this machine, for
the paper CNN with batch 10 through the client layer (vectorized: many clients per call; loop: one at a
time), on CUDA when present (then the total is in GPU-hours), else the CPU with 1 torch thread;
evaluation is not counted.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from fedrepro.engines.asynchronous import trace_of
from fedrepro.models import build_model
from fedrepro.nn import DeviceData, LocalOptimizer, LocalTrainer
from fedrepro.validate import load_and_validate


def client_steps(scale: str, seed: int) -> dict[str, float]:
    _, table = load_and_validate({"scale": scale}, Path("config"))
    totals: dict[str, float] = {}
    for spec in table.runs.values():
        if spec["paper"] != "defedavg":
            continue
        trace = trace_of(spec, seed)
        group = f"{spec['dataset']}, {spec['partition']}" + (", Figs 1, 6-7" if "rounds" in spec else ", Figs 2-5")
        totals[group] = totals.get(group, 0.0) + float(trace.n_steps.sum()) * spec["seeds"]
    return totals


def seconds_per_step(shape: tuple[int, ...], backend: str, clients: int, device: str, steps: int = 5) -> float:
    torch.set_num_threads(1)
    images = torch.randn(clients * 20, *shape, device=device)
    data = DeviceData(images, torch.randint(0, 10, (len(images),), device=device),
                      torch.arange(len(images), device=device).view(clients, 20))
    model = build_model("cnn_defedavg", shape, 10).to(device)
    trainer = LocalTrainer(model, data, LocalOptimizer("sgd", 0.01), steps, 10, backend)
    W = trainer.flat.flatten().expand(clients, -1).clone()
    idx = trainer.draw(lambda purpose, rnd, client=None: torch.Generator().manual_seed(client), 0,
                       torch.arange(clients))
    trainer.run(W, idx)  # warm-up (and CUDA graph capture)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    trainer.run(W, idx)
    sync()
    return (time.perf_counter() - t0) / (clients * steps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default="paper")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate-only", action="store_true")
    args = p.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rates = {}
    for name, shape in (("fashion_mnist", (1, 28, 28)), ("cifar10", (3, 32, 32))):
        for backend, clients in (("loop", 8), ("vectorized", 64 if device == "cuda" else 8)):
            rates[(name, backend)] = seconds_per_step(shape, backend, clients, device)
            print(f"{name:14s} {backend:10s} {rates[(name, backend)] * 1e3:8.3f} ms per client-step ({device})")
    if args.rate_only:
        return
    totals = client_steps(args.scale, args.seed)
    fastest = {name: min(rates[(name, b)] for b in ("loop", "vectorized")) for name in ("fashion_mnist", "cifar10")}
    cpu_seconds = 0.0  # device seconds
    for group, steps in sorted(totals.items()):
        rate = fastest[group.split(",")[0]]
        cpu_seconds += steps * rate
        print(f"{group:32s} {steps / 1e9:7.3f} G client-steps (all seeds)")
    cost = f"{cpu_seconds / 3600:.1f} GPU-hours" if device == "cuda" else f"{cpu_seconds / 86400:.0f} CPU-days"
    print(f"{'total':32s} {sum(totals.values()) / 1e9:7.3f} G client-steps; at this {device}'s rate {cost}")


if __name__ == "__main__":
    main()
