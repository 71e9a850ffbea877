"""Client-steps per second of local training: vectorized backend vs loop backend vs a ceiling.

A client-step is one local minibatch step of one client. For D clients running E steps from a common
start (one FedCluster cycle or FedAvg round) it reports, from the same process and interleaved:
- vectorized: LocalTrainer(backend="vectorized"), all D clients in lockstep (on CUDA replayed from a
  CUDA graph unless --eager);
- loop: LocalTrainer(backend="loop"), one client at a time;
- ceiling: one centralized SGD step of the plain nn.Module + torch.optim.SGD on the D x B samples
  stacked as one batch (no per-client weights: the most a lockstep step could hope for).
Each timing is the median of --repeats interleaved repetitions; "spread" is (max - min) / median.

    .venv/bin/python benchmarks/bench_clients.py                       # both workloads, CPU
    .venv/bin/python benchmarks/bench_clients.py --workload quick --threads 1
    python3 benchmarks/bench_clients.py --device cuda --paper-clients 10 100   # on a GPU machine
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from fedrepro.nn import DeviceData, LocalOptimizer, LocalTrainer
from fedrepro.seeding import torch_generator
from fedrepro.models import build_model

# (model, input shape, batch B, local steps E): spec §6.2 (quick: CIFAR-10 at 14x14, the larger MLP)
# and §3.0 (paper: small AlexNet on 3x28x28).
WORKLOADS = {"quick": ("mlp", (3, 14, 14), 10, 12), "paper": ("alexnet", (3, 28, 28), 30, 20)}


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str) -> float:
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def bench(workload: str, D: int, steps: int, args) -> dict[str, tuple[float, float]]:
    name, shape, B, _ = WORKLOADS[workload]
    dev = args.device
    torch.manual_seed(0)
    model = build_model(name, shape, 10).to(dev)
    n_pool, per_device = 5000, 100
    images = torch.randn(n_pool, *shape, device=dev)
    labels = torch.randint(0, 10, (n_pool,), device=dev)
    table = torch.randint(0, n_pool, (D, per_device), device=dev)
    data = DeviceData(images, labels, table)
    opt = LocalOptimizer(args.opt, 0.01)
    trainers = {
        be: LocalTrainer(model, data, opt, steps, B, be, cuda_graphs=not args.eager) for be in ("vectorized", "loop")
    }
    W = trainers["loop"].flat.flatten()
    streams = lambda purpose, rnd, client=None: torch_generator("bench", purpose, rnd, client, device=dev)  # noqa: E731
    idx = trainers["loop"].draw(streams, 0, torch.arange(D))
    sgd = torch.optim.SGD(model.parameters(), lr=0.01)

    def ceiling() -> None:
        for t in range(steps):
            b = idx[:, t].reshape(-1)
            sgd.zero_grad()
            F.cross_entropy(model(images[b]), labels[b]).backward()
            sgd.step()

    runs = {"vectorized": lambda: trainers["vectorized"].run(W, idx), "loop": lambda: trainers["loop"].run(W, idx),
            "ceiling": ceiling}
    for fn in runs.values():  # warm-up: allocator, kernels, vmap tracing
        fn()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeats):
        for k, fn in runs.items():
            times[k].append(timed(fn, dev))
    out = {}
    for k, ts in times.items():
        med = statistics.median(ts)
        out[k] = (D * steps / med, (max(ts) - min(ts)) / med)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", choices=["quick", "paper", "all"], default="all")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1, help="1: a busy 2-core CPU makes threaded tiny ops stall")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--opt", default="sgd", help="local optimizer (sgd, sgdm, adam, fedprox)")
    p.add_argument("--eager", action="store_true", help="CUDA: no graph replay for the vectorized backend")
    p.add_argument("--quick-clients", type=int, nargs="+", default=[2, 4, 8, 40], help="quick: FC20, FC10, FC5, FedAvg")
    p.add_argument("--paper-clients", type=int, nargs="+", default=[10], help="paper: 10 = FC10 cycle, 100 = FedAvg")
    p.add_argument("--paper-steps", type=int, default=2, help="local steps timed at paper scale (E = 20 in the paper)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}, opt {args.opt}, "
          f"repeats {args.repeats}, cuda graphs {not args.eager}")
    print(f"client-steps/s (spread); D clients x E local steps per timing\n"
          f"{'workload':8} {'D':>4} {'E':>3} | {'vectorized':>16} {'loop':>16} {'ceiling':>16} | vec/loop vec/ceiling")
    for workload in ("quick", "paper") if args.workload == "all" else (args.workload,):
        clients = args.quick_clients if workload == "quick" else args.paper_clients
        steps = WORKLOADS[workload][3] if workload == "quick" else args.paper_steps
        for D in clients:
            r = bench(workload, D, steps, args)
            cells = " ".join(f"{r[k][0]:>9.1f} ({r[k][1]:4.0%})" for k in ("vectorized", "loop", "ceiling"))
            vec, loop, ceil = (r[k][0] for k in ("vectorized", "loop", "ceiling"))
            print(f"{workload:8} {D:>4} {steps:>3} | {cells} | {vec / loop:8.2f} {vec / ceil:11.2f}", flush=True)


if __name__ == "__main__":
    main()
