"""Evaluation throughput of a server model on the CPU: the module's own forward against the grouped
path of nn/convnets.py (replicated_forward), images per second, 1 torch thread, median of repeats.

    .venv/bin/python benchmarks/bench_eval.py                  # cnn_tiny 3x14x14 and 1x14x14, AlexNet 3x28x28
    .venv/bin/python benchmarks/bench_eval.py --copies 1 4 8 16
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from fedrepro.models import build_model
from fedrepro.nn.convnets import replicated_forward
from fedrepro.nn.flat import FlatModel

CASES = (("cnn_tiny", (3, 14, 14), 15000), ("cnn_tiny", (1, 14, 14), 15000), ("alexnet", (3, 28, 28), 2048))


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@torch.no_grad()
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--copies", type=int, nargs="+", default=[8])
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(1)
    for name, shape, n in CASES:
        torch.manual_seed(0)
        flat = FlatModel(build_model(name, shape, 10))
        W, x = flat.flatten(), torch.randn(n, *shape)
        params = flat.unflatten(W)
        batches = [x[s : s + args.batch] for s in range(0, n, args.batch)]
        module = median_seconds(lambda: [flat.forward(W, b) for b in batches], args.repeats)
        line = f"{name} {'x'.join(map(str, shape))} n={n}: module {n / module:,.0f} img/s"
        ref = torch.cat([flat.forward(W, b) for b in batches])
        for c in args.copies:
            grouped = median_seconds(lambda: [replicated_forward(flat.module, params, b, c) for b in batches], args.repeats)
            diff = (torch.cat([replicated_forward(flat.module, params, b, c) for b in batches]) - ref).abs().max()
            line += f" | copies={c} {n / grouped:,.0f} img/s ({module / grouped:.2f}x, max diff {diff:.1e})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
