"""Local training speed: vectorized backend vs loop backend vs a ceiling, from one process, interleaved.

For D clients running E local steps (one FedCluster cycle, FedAvg round, or a batch of asynchronous
trainings) each repetition times, in turn:
- vectorized: LocalTrainer(backend="vectorized"), all D clients in lockstep (on CUDA replayed from a
  CUDA graph unless --eager); for a conv net on the CPU, the grouped path of nn/convnets.py;
- vmap (conv nets on the CPU only): the same backend with vmap(grad) as its gradient, the path
  conv nets took before nn/convnets.py (and still take on CUDA);
- loop: LocalTrainer(backend="loop"), one client at a time;
- ceiling: E SGD steps of one plain nn.Module + torch.optim.SGD, each on the D x B samples of a step
  stacked as one batch (no per-client weights: the most a lockstep step could hope for).
Each timing is the median of --repeats repetitions; "spread" is (max - min) / median. The ratios are
TIME ratios, e.g. vectorized/ceiling = median time of vectorized / median time of ceiling (lower is
better: 1.0 = as fast as the ceiling; vectorized/loop < 1 = faster than the loop).

The last column is max |vectorized - loop| over the final parameters of the warm-up run (float32).

Workloads: quick (FedCluster's first reduced profile, docs/scales.md: CIFAR-10 at 14x14, MLP 588-64-10),
cnn_tiny (the same inputs, E and B with `cnn_tiny`, the small AlexNet with 8/16 channels and 64/32 hidden
units: issue 12's FedCluster quick scale, 10 clients per cycle at 1,000 devices), cnn_tiny_gray (the same on
1x14x14, its MNIST figures), paper (docs/papers/fedcluster.md R1: small AlexNet on 3x28x28, a few of its 20
local steps), and w1 (100 devices x 320 MNIST-shaped samples, MLP 784-200-200-10, 10 steps of batch 32, lr
0.05).

    .venv/bin/python benchmarks/bench_clients.py                        # quick, cnn_tiny(_gray) and w1, CPU, 1 thread
    .venv/bin/python benchmarks/bench_clients.py --workload cnn_tiny --clients 10 50
    .venv/bin/python benchmarks/bench_clients.py --workload w1 --clients 10 100
    python3 benchmarks/bench_clients.py --workload paper --device cuda --clients 10 100   # on a GPU machine
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

from fedrepro.nn import CROSS_ENTROPY, DeviceData, LocalOptimizer, LocalTrainer
from fedrepro.nn.convnets import grouped_convnet
from fedrepro.nn.gradients import vmapped_grad
from fedrepro.seeding import torch_generator
from fedrepro.models import build_model


@dataclass(frozen=True)
class Workload:
    model: str
    shape: tuple[int, ...]
    batch: int
    steps: int
    lr: float
    n_devices: int | None  # None: each of D devices holds `per_device` draws from a pool of 5000 images
    per_device: int
    clients: tuple[int, ...]  # default client counts


WORKLOADS = {
    "quick": Workload("mlp", (3, 14, 14), 10, 12, 0.01, None, 100, (2, 4, 8, 40)),  # FC20, FC10, FC5, FedAvg
    "cnn_tiny": Workload("cnn_tiny", (3, 14, 14), 10, 12, 0.01, None, 100, (10, 50)),  # M = 10 / FedAvg at 1000 x 100
    "cnn_tiny_gray": Workload("cnn_tiny", (1, 14, 14), 10, 12, 0.01, None, 100, (10, 50)),  # the same on MNIST
    "paper": Workload("alexnet", (3, 28, 28), 30, 2, 0.01, None, 100, (10,)),  # E = 20 in the paper
    "w1": Workload("mlp2", (1, 28, 28), 32, 10, 0.05, 100, 320, (10, 50, 100)),
}
ALL = ("quick", "cnn_tiny", "cnn_tiny_gray", "w1")  # --workload all (paper is for a GPU)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str) -> float:
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def bench(w: Workload, D: int, args) -> tuple[dict[str, tuple[float, float]], float]:
    """Median seconds and spread per contender, and max |vectorized - loop|."""
    dev = args.device
    torch.manual_seed(0)
    model = build_model(w.model, w.shape, 10).to(dev)
    if w.n_devices is None:
        n_pool, n_devices = 5000, D
        table = torch.randint(0, n_pool, (D, w.per_device), device=dev)
    else:  # disjoint devices, D of them active
        n_pool, n_devices = w.n_devices * w.per_device, w.n_devices
        table = torch.arange(n_pool, device=dev).view(n_devices, w.per_device)
    images = torch.randn(n_pool, *w.shape, device=dev)
    labels = torch.randint(0, 10, (n_pool,), device=dev)
    data = DeviceData(images, labels, table)
    opt = LocalOptimizer(args.opt, w.lr)
    trainers = {
        be: LocalTrainer(model, data, opt, w.steps, w.batch, be, cuda_graphs=not args.eager)
        for be in ("vectorized", "loop")
    }
    W = trainers["loop"].flat.flatten()
    streams = lambda purpose, rnd, client=None: torch_generator("bench", purpose, rnd, client, device=dev)  # noqa: E731
    idx = trainers["loop"].draw(streams, 0, torch.randperm(n_devices, generator=torch.Generator().manual_seed(0))[:D])
    sgd = torch.optim.SGD(model.parameters(), lr=w.lr)

    def ceiling() -> None:
        for t in range(w.steps):
            b = idx[:, t].reshape(-1)
            sgd.zero_grad()
            F.cross_entropy(model(images[b]), labels[b]).backward()
            sgd.step()

    if grouped_convnet(model) and not dev.startswith("cuda"):
        trainers["vmap"] = LocalTrainer(model, data, opt, w.steps, w.batch, "vectorized")
        trainers["vmap"]._stacked_grad = vmapped_grad(trainers["vmap"].flat, CROSS_ENTROPY)
    runs = {name: partial(trainer.run, W, idx) for name, trainer in trainers.items()} | {"ceiling": ceiling}
    finals = {name: fn() for name, fn in runs.items()}  # warm-up: allocator, kernels, vmap tracing, buffers
    max_diff = float((finals["vectorized"] - finals["loop"]).abs().max())
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeats):
        for k, fn in runs.items():
            times[k].append(timed(fn, dev))
    medians = {k: (statistics.median(ts), (max(ts) - min(ts)) / statistics.median(ts)) for k, ts in times.items()}
    return medians, max_diff


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", choices=[*WORKLOADS, "all"], default="all", help=f"all: {', '.join(ALL)}")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1, help="1: a busy 2-core CPU makes threaded tiny ops stall")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--opt", default="sgd", help="local optimizer (sgd, sgdm, adam, fedprox)")
    p.add_argument("--eager", action="store_true", help="CUDA: no graph replay for the vectorized backend")
    p.add_argument("--clients", type=int, nargs="+", help="client counts D (default: per workload)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}, opt {args.opt}, "
          f"median of {args.repeats} interleaved repeats, cuda graphs {not args.eager}\n"
          "per contender: client-steps/s (spread); ratios are time ratios, e.g. vectorized/ceiling = "
          "time(vectorized) / time(ceiling), lower is better", flush=True)
    for name in ALL if args.workload == "all" else (args.workload,):
        w = WORKLOADS[name]
        for D in args.clients or w.clients:
            r, max_diff = bench(w, D, args)
            cells = " ".join(f"{k} {D * w.steps / s:.1f} ({spread:.0%})" for k, (s, spread) in r.items())
            vec = r["vectorized"][0]
            ratios = f"vectorized/ceiling={vec / r['ceiling'][0]:.2f} vectorized/loop={vec / r['loop'][0]:.2f}"
            if "vmap" in r:
                ratios += f" vmap/loop={r['vmap'][0] / r['loop'][0]:.2f}"
            print(f"{name} clients={D} E={w.steps} B={w.batch} | {cells} | {ratios} | max diff {max_diff:.1e}",
                  flush=True)


if __name__ == "__main__":
    main()
