"""The vectorized backend reproduces the loop backend (the reference) for every algorithm and optimizer."""

from __future__ import annotations

import pytest
import torch

from fedrepro.algorithms.fedcluster import FedAvg, FedCluster
from fedrepro.nn import OPTIMIZERS

from nn_testdata import N_DEVICES, SHAPES, make_problem, make_streams

ROUNDS = 3


def run(problem, algorithm: str, opt: str, backend: str) -> torch.Tensor:
    # Adam's rates are ~1/10 of SGD's in the paper; a large one here would only amplify rounding.
    trainer = problem.trainer(opt, lr=0.01 if opt == "adam" else 0.1, backend=backend)
    streams = make_streams("equivalence")
    if algorithm == "fedcluster":
        clusters = torch.randperm(N_DEVICES, generator=torch.Generator().manual_seed(1)).view(4, -1)
        algo = FedCluster(trainer, clusters, streams, frac=0.34)  # 2 of 6 devices per cycle
    else:
        algo = FedAvg(trainer, streams, frac=0.25)  # 6 of 24 devices per round
    W = problem.W0
    for r in range(ROUNDS):
        W, _ = algo.round(W, r)
    return W


@pytest.mark.parametrize("opt", OPTIMIZERS)
@pytest.mark.parametrize("algorithm", ["fedcluster", "fedavg"])
def test_vectorized_equals_loop(problem, algorithm, opt):
    loop = run(problem, algorithm, opt, "loop")
    vectorized = run(problem, algorithm, opt, "vectorized")
    assert (loop - problem.W0).abs().max() > 1e-3  # training moved the model
    torch.testing.assert_close(vectorized, loop, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("model", sorted(SHAPES))
def test_vectorized_equals_loop_float32(model):
    problem = make_problem(model, dtype=torch.float32)
    loop = run(problem, "fedcluster", "sgdm", "loop")
    torch.testing.assert_close(run(problem, "fedcluster", "sgdm", "vectorized"), loop, rtol=1e-5, atol=1e-6)


def test_paper_alexnet_vectorized_gradient_matches_loop():
    """The paper's model (conv, max-pool, LRN) at its own size, through the grouped conv path."""
    from fedrepro.nn import DeviceData, LocalOptimizer, LocalTrainer
    from fedrepro.models import build_model

    torch.manual_seed(0)
    model = build_model("alexnet", (3, 28, 28), 10)
    gen = torch.Generator().manual_seed(0)
    data = DeviceData(torch.randn(8, 3, 28, 28, generator=gen), torch.randint(0, 10, (8,), generator=gen),
                      torch.arange(8).view(2, 4))
    idx = torch.tensor([[[0, 1]], [[5, 6]]])  # 2 clients, 1 step, batch 2
    out = {}
    for backend in ("loop", "vectorized"):
        trainer = LocalTrainer(model, data, LocalOptimizer("sgd", 1.0), 1, 2, backend)
        out[backend] = trainer.run(trainer.flat.flatten(), idx)
    torch.testing.assert_close(out["vectorized"], out["loop"], rtol=1e-4, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("model", ["mlp", "cnn_tiny"])
def test_cuda_backends_match_cpu(model):
    """Data and parameters on the GPU give the CPU's result when the streams are the same (CPU)
    generators; with CUDA generators the two backends still agree with each other."""
    from fedrepro.nn import DeviceData
    from fedrepro.seeding import torch_generator

    cpu = make_problem(model)
    gpu = make_problem(model)
    gpu.model.cuda()
    gpu.data = DeviceData(*(t.cuda() for t in (cpu.data.images, cpu.data.labels, cpu.data.table)))
    gpu.W0 = cpu.W0.cuda()
    expected = run(cpu, "fedcluster", "adam", "loop")
    for backend in ("loop", "vectorized"):
        torch.testing.assert_close(run(gpu, "fedcluster", "adam", backend).cpu(), expected, rtol=1e-9, atol=1e-11)
    def cuda_streams(purpose, rnd, client=None):
        return torch_generator("cuda", purpose, rnd, client, device="cuda")

    on_device = {}
    for backend in ("loop", "vectorized"):
        trainer = gpu.trainer("sgdm", backend=backend)
        on_device[backend] = FedAvg(trainer, cuda_streams, frac=0.25).round(gpu.W0, 0)[0]
    assert on_device["loop"].is_cuda
    torch.testing.assert_close(on_device["vectorized"], on_device["loop"], rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("opt", OPTIMIZERS)
@pytest.mark.parametrize("model", ["mlp", "cnn_tiny"])
def test_cuda_graph_replay_equals_eager(model, opt):
    from fedrepro.nn import DeviceData, LocalOptimizer, LocalTrainer

    cpu = make_problem(model)
    data = DeviceData(*(t.cuda() for t in (cpu.data.images, cpu.data.labels, cpu.data.table)))
    module = cpu.model.cuda()
    out = {}
    for graphs in (False, True):
        trainer = LocalTrainer(module, data, LocalOptimizer(opt, 0.05), 3, 4, "vectorized", cuda_graphs=graphs)
        streams = make_streams("graphs")
        W = cpu.W0.cuda()
        for r in range(2):  # the second round replays the recorded graph with new inputs
            W = trainer.run(W, trainer.draw(streams, r, torch.tensor([1, 5, 9]))).mean(0)
        out[graphs] = W
    assert trainer._graphs
    torch.testing.assert_close(out[True], out[False], rtol=1e-12, atol=1e-14)
