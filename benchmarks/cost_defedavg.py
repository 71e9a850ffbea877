"""What the DeFedAvg paper scale costs: the client-steps its runs compute, counted from their own timing
traces (only consumed trainings are computed), times a measured rate per client-step of the paper's CNN.

    PYTHONPATH=src .venv/bin/python benchmarks/cost_defedavg.py [--scale paper] [--seed 0] [--rate-only]

Counts one seed of every run of the scale (traces depend on the fleet and the seed only, so other seeds
cost about the same) and multiplies by the run's seeds. The rate is measured here, on this machine, for
the paper CNN with batch 10 through the client layer (vectorized: many clients per call; loop: one at a
time), 1 torch thread; evaluation is not counted.
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


def seconds_per_step(shape: tuple[int, ...], backend: str, clients: int, steps: int = 5) -> float:
    torch.set_num_threads(1)
    images = torch.randn(clients * 20, *shape)
    data = DeviceData(images, torch.randint(0, 10, (len(images),)), torch.arange(len(images)).view(clients, 20))
    trainer = LocalTrainer(build_model("cnn_defedavg", shape, 10), data, LocalOptimizer("sgd", 0.01), steps, 10,
                           backend)
    W = trainer.flat.flatten().expand(clients, -1).clone()
    idx = trainer.draw(lambda purpose, rnd, client=None: torch.Generator().manual_seed(client), 0,
                       torch.arange(clients))
    trainer.run(W, idx)  # warm-up
    t0 = time.perf_counter()
    trainer.run(W, idx)
    return (time.perf_counter() - t0) / (clients * steps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", default="paper")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate-only", action="store_true")
    args = p.parse_args()
    rates = {}
    for name, shape in (("fashion_mnist", (1, 28, 28)), ("cifar10", (3, 32, 32))):
        for backend, clients in (("loop", 8), ("vectorized", 8)):
            rates[(name, backend)] = seconds_per_step(shape, backend, clients)
            print(f"{name:14s} {backend:10s} {rates[(name, backend)] * 1e3:8.2f} ms per client-step (CPU, 1 thread)")
    if args.rate_only:
        return
    totals = client_steps(args.scale, args.seed)
    fastest = {name: min(rates[(name, b)] for b in ("loop", "vectorized")) for name in ("fashion_mnist", "cifar10")}
    cpu_seconds = 0.0
    for group, steps in sorted(totals.items()):
        rate = fastest[group.split(",")[0]]
        cpu_seconds += steps * rate
        print(f"{group:32s} {steps / 1e9:7.3f} G client-steps (all seeds)")
    print(f"{'total':32s} {sum(totals.values()) / 1e9:7.3f} G client-steps; at this CPU's rate "
          f"{cpu_seconds / 86400:.0f} CPU-days")


if __name__ == "__main__":
    main()
