"""Wall time of one round of FedCluster, FedAvg and centralized SGD, and of one evaluation, at
FedCluster's first reduced profile ("quick": an MLP at 400 devices, docs/scales.md) or its paper scale,
on synthetic data of the real shapes (the cost does not depend on pixel values). For planning the quick
budget and the GPU hours of the paper scale.

    .venv/bin/python benchmarks/bench_rounds.py --scale quick
    .venv/bin/python benchmarks/bench_rounds.py --scale paper --warmup 0 --rounds 1 --methods fedcluster
    python3 benchmarks/bench_rounds.py --scale paper --device cuda
"""

from __future__ import annotations

import argparse
import time

import torch

from fedrepro.algorithms.fedcluster import CentralizedSGD, FedAvg, FedCluster, fedcluster_lr
from fedrepro.nn import DeviceData, LocalOptimizer, LocalTrainer, evaluate, pooled_train_set
from fedrepro.seeding import torch_generator
from fedrepro.models import build_model

# paper §IV-A (paper, CIFAR-10) and the first reduced profile (quick): devices, samples/device, E, B, model,
# input, M, csgd steps
SCALES = {
    "quick": dict(n_devices=400, per_device=100, E=12, B=10, model="mlp", shape=(3, 14, 14), M=10, csgd_steps=240),
    "paper": dict(
        n_devices=1000, per_device=500, E=20, B=30, model="alexnet", shape=(3, 28, 28), M=10, csgd_steps=1000
    ),
}


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=sorted(SCALES), default="quick")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--backend", default="vectorized")
    p.add_argument("--opt", default="sgd")
    p.add_argument("--eager", action="store_true", help="CUDA: no graph replay for the vectorized backend")
    p.add_argument("--M", type=int, help="clusters (default: the scale's)")
    p.add_argument("--model", help="model name (default: the scale's)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds per method")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (allocator, CUDA graph capture)")
    p.add_argument("--methods", nargs="+", default=["fedcluster", "fedavg", "csgd", "eval"])
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    s, dev = SCALES[args.scale], args.device
    M = args.M or s["M"]
    torch.manual_seed(0)
    n_pool, n_test = 50_000, 10_000
    images = torch.randn(n_pool, *s["shape"], device=dev)
    labels = torch.randint(0, 10, (n_pool,), device=dev)
    table = torch.randint(0, n_pool, (s["n_devices"], s["per_device"]), device=dev)
    data = DeviceData(images, labels, table)
    model = build_model(args.model or s["model"], s["shape"], 10).to(dev)
    streams = lambda purpose, rnd, client=None: torch_generator("bench", purpose, rnd, client, device=dev)  # noqa: E731

    def trainer(opt: str, lr: float) -> LocalTrainer:
        return LocalTrainer(model, data, LocalOptimizer(opt, lr), s["E"], s["B"], args.backend, not args.eager)

    clusters = torch.randperm(s["n_devices"]).view(M, -1)
    algos = {
        "fedcluster": FedCluster(trainer(args.opt, fedcluster_lr(0.1, M)), clusters, streams),
        "fedavg": FedAvg(trainer(args.opt, 0.1), streams),
        "csgd": CentralizedSGD(trainer("sgd", 0.01), streams, s["csgd_steps"], 2 * s["B"]),
    }
    W0 = algos["fedavg"].trainer.flat.flatten()
    print(f"scale {args.scale}, device {dev}, threads {torch.get_num_threads()}, backend {args.backend}, "
          f"opt {args.opt}, M {M}, model {args.model or s['model']}, cuda graphs {not args.eager}")
    for name in args.methods:
        if name == "eval":
            flat = algos["fedavg"].trainer.flat
            index, counts = pooled_train_set(table)
            test_x, test_y = images[:n_test], labels[:n_test]

            def step(W, r):
                evaluate(flat, W, test_x, test_y)
                evaluate(flat, W, images, labels, index, counts)
                return W, {}
            what = f"eval: {n_test} test + {len(index)} unique train images"
        else:
            step, what = algos[name].round, name
        W = W0
        for r in range(args.warmup):
            W, _ = step(W, r)
        sync(dev)
        times = []
        for r in range(args.warmup, args.warmup + args.rounds):
            start = time.perf_counter()
            W, _ = step(W, r)
            sync(dev)
            times.append(time.perf_counter() - start)
        print(f"{what:45} s/round: median {sorted(times)[len(times) // 2]:8.3f}  min {min(times):8.3f}  "
              f"max {max(times):8.3f}", flush=True)


if __name__ == "__main__":
    main()
