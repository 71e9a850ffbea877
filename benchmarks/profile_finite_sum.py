"""Where FedPAGE's paper-scale CPU time goes, by kernel: one run of each of the 44 configuration classes
(bench_finite_sum.py's `classes`), 1 seed x --rounds rounds, each timed kernel call weighted by its class's
paper-scale size (runs x 5 seeds x 3000 rounds / --rounds), so the table adds up like the pipeline does.

    PYTHONPATH=src .venv/bin/python benchmarks/profile_finite_sum.py --rounds 100

Run from a directory with the project's config/ and data/prepared/{a9a,w8a}.npz. Kernels are timed by
wrapping the torch entry points the engine calls (torch.bmm, Tensor.__matmul__, torch.index_select,
Tensor.topk, torch.rand); "the rest" is everything else in the step loops (numpy arithmetic, Python).
The timers themselves cost a few percent, so the weighted total is above bench_finite_sum.py's.

It also times one dense product of the slowest class (SCAFFOLD/FedAvg, b = 652 on a9a: (2,652,123) x
(2,123,1)) through torch (Intel MKL, the library torch ships with) and through numpy (its own OpenBLAS),
and says whether the two give the same floats: the metrics' floats are MKL's, whose summation order
depends on the code path MKL picks for the CPU (MKL_VERBOSE=1 shows the DGEMM calls).
"""

from __future__ import annotations

import argparse
import collections
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from fedrepro.data import load_prepared
from fedrepro.engines import ENGINES
from fedrepro.engines.context import RunContext
from fedrepro.engines.driver import run_seeds
from fedrepro.validate import load_and_validate

sys.path.insert(0, str(Path(__file__).parent))
from bench_finite_sum import run_classes  # noqa: E402

PAPER_SEED_ROUNDS = 5 * 3000  # seeds x rounds of every paper-scale FedPAGE run


class KernelTimer:
    """Wraps torch entry points; adds each call's seconds x the current weight to its kernel's total."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.weight = 0.0  # set per run: nothing outside the runs counts

    def wrap(self, owner, name: str, label) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            out = original(*args, **kwargs)
            self.seconds[label(*args)] += (time.perf_counter() - start) * self.weight
            return out

        setattr(owner, name, timed)


def product_kind(a: torch.Tensor, b: torch.Tensor) -> str:
    if a.layout == torch.sparse_csr:
        return "sparse CSR x vector (evaluation, full gradients; torch's sparse kernel)"
    if b.shape[-1] <= 2:  # one point, or two stacked (FedPAGE's differences)
        return "dense rows x points, 1-2 columns (MKL)"
    return "dense coefficients x rows (MKL)"


def dense_product_check(repeats: int = 200) -> str:
    gen = torch.Generator().manual_seed(0)
    A = (torch.rand(2, 652, 123, generator=gen) < 0.11).double()  # a9a is binary, ~11% non-zero
    y = torch.randn(2, 123, 1, generator=gen, dtype=torch.float64) * 0.01
    An, yn = A.numpy(), y.numpy()

    def median_us(fn) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e6

    torch_us, numpy_us = median_us(lambda: torch.bmm(A, y)), median_us(lambda: np.matmul(An, yn))
    differ = int((torch.bmm(A, y).numpy() != np.matmul(An, yn)).sum())
    return (f"(2,652,123) x (2,123,1), float64, 1 thread: torch.bmm (MKL) {torch_us:.0f} us, np.matmul "
            f"(OpenBLAS) {numpy_us:.0f} us; {differ} of {A.shape[0] * A.shape[1]} outputs differ")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=100)
    args = p.parse_args()
    torch.set_num_threads(1)
    _, table = load_and_validate({"scale": "paper"}, Path("config"))
    data = {name: load_prepared(Path("data/prepared") / f"{name}.npz") for name in ("a9a", "w8a")}
    log = logging.getLogger("profile_finite_sum")
    log.addHandler(logging.NullHandler())
    log.propagate = False

    timer = KernelTimer()
    timer.wrap(torch, "bmm", product_kind)
    timer.wrap(torch.Tensor, "__matmul__", product_kind)
    timer.wrap(torch, "index_select", lambda *a: "minibatch row gathers (index_select)")
    timer.wrap(torch.Tensor, "topk", lambda *a: "minibatch draws (rand, topk)")
    timer.wrap(torch, "rand", lambda *a: "minibatch draws (rand, topk)")

    total = 0.0
    engine = ENGINES["finite_sum"]
    for name, spec, n in run_classes(table):
        spec = dict(spec, rounds=args.rounds, seeds=1)
        with tempfile.TemporaryDirectory() as tmp:
            ctx = RunContext(name, spec, "cpu", Path(tmp) / "ckpt.pt", log, show_progress=False)
            setup = engine.setup(spec, data[spec["dataset"]], ctx)
            timer.weight = n * PAPER_SEED_ROUNDS / args.rounds
            start = time.process_time()
            run_seeds(engine, setup, spec, ctx)
            total += (time.process_time() - start) * timer.weight
        timer.weight = 0.0

    print(f"paper scale, weighted ({args.rounds} rounds x 1 seed per class): {total:.0f} CPU s")
    kernels = sorted(timer.seconds.items(), key=lambda kv: -kv[1])
    for label, seconds in kernels + [("the rest (numpy arithmetic, Python)", total - sum(timer.seconds.values()))]:
        print(f"  {seconds:7.0f} s  {100 * seconds / total:4.1f}%  {label}")
    print(dense_product_check())


if __name__ == "__main__":
    main()
