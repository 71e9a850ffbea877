"""Vertically and horizontally partitioned FL: engine `vertical`, TDCD (paper §3, Algorithm 1).

N silos each hold a contiguous block of every sample's features (data/vertical.py, along `split_axis`
of the data arrays); within silo j the training IDs are split over K_j clients (a seeded permutation cut
by np.array_split, so every ID is owned, docs/papers/tdcd.md R12). `client_assignment: shared` uses one permutation
for every silo (the authors' code: client k of every silo holds the same IDs); `per_silo` draws one per
silo, and embeddings are routed by sample ID either way. The algorithm is algorithms/tdcd.py over the
silos' clients (nn/silos.py, backends loop and vectorized).

The driver's round is one local iteration (Engine.steps_key = `iterations`), not one TDCD round of Q:
- evaluations fall anywhere, also within a TDCD round (the virtual average of the clients), so runs of
  every Q evaluate at the same iterations t and one run feeds both the per-iteration and the time
  figures (time columns time_tc<c> = t (3c + Q t_comp) / Q for each c of `t_comm`, paper §5.2);
- a checkpoint may fall within a round: the state then holds the clients' states, the round's batch
  and the other silos' embeddings (a few MB at the reduced scale), so a resumed run continues bit for
  bit; nothing is recomputed from a different starting point.

Random streams (common random numbers, keyed by the settings they depend on, never by lr or Q: numerics.py KEYING):
- each silo's initial block from (dataset, view, model, out_dim, N, split_axis, hidden_total, silo, seed);
- the client assignment from (dataset, view, K, client_assignment, seed[, silo]);
- round r's minibatch (B IDs without replacement, the same for every silo) from (dataset, view, B, seed,
  r), drawn with numpy on the CPU so it does not depend on the device;
- the fixed train-loss subset from (dataset, view, train_eval_subsample, seed), the test subset (if any)
  from (dataset, view, test_eval_subsample).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from fedrepro.algorithms import method
from fedrepro.algorithms.method import restore
from fedrepro.algorithms.tdcd import Tiers
from fedrepro.data.vertical import split_features, split_sizes
from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Length, Limit, Row, Setup, Trainer
from fedrepro.engines.vertical_inputs import Images, model_inputs
from fedrepro.vertical_time import time_at, time_column
from fedrepro.errors import ConfigError
from fedrepro.models import build_model, seeded_model
from fedrepro.nn.silos import StateLayout, sample_losses, silo_backend
from fedrepro.numerics import keying
from fedrepro.seeding import numpy_rng
from fedrepro.utils.digest import array_digest

METRICS = ("train_loss", "test_loss", "test_accuracy", "test_f1", "test_top5")
TEST_METRIC = {"accuracy": "test_accuracy", "f1": "test_f1", "top5": "test_top5"}
HIDDEN_MODELS = ("lstm", "mlp")  # their per-silo hidden width is hidden_total // N (docs/papers/tdcd.md R4: 64 // N)
EVAL_BATCH = 1024
DTYPES = {"float32": torch.float32, "float64": torch.float64}
# `client_assignment` (assignment): one permutation of the IDs for every silo, or one per silo
CLIENT_ASSIGNMENTS = ("shared", "per_silo")


class TimeColumns(tuple):
    """The engine's x columns: iteration, round and time_tc<c> for the t_comm values c a run lists."""

    def __contains__(self, column: object) -> bool:
        if isinstance(column, str) and column.startswith("time_tc"):
            try:
                return float(column[len("time_tc"):]) >= 0
            except ValueError:
                return False
        return tuple.__contains__(self, column)


def clients_per_silo(spec: dict[str, Any]) -> list[int]:
    """K per silo: a list of N counts (its length checked with the limits, VerticalEngine.lengths), or one for all."""
    K = spec["K"]
    return [K] * spec["N"] if isinstance(K, int) else list(K)


def assignment(n_ids: int, K: list[int], mode: str, key: str, seed: int) -> list[np.ndarray]:
    """owner[j] (n_ids,): the client of silo j holding each ID. One seeded permutation cut into K_j
    contiguous blocks by np.array_split (every ID owned); `shared`: the same permutation for all silos."""
    owners = []
    for j, k in enumerate(K):
        parts = ("assignment", key, seed) if mode == "shared" else ("assignment", key, seed, j)
        perm = numpy_rng(*parts).permutation(n_ids)
        owner = np.empty(n_ids, dtype=np.int64)
        for client, ids in enumerate(np.array_split(perm, k)):
            owner[ids] = client
        owners.append(owner)
    return owners


def eval_metrics(logits: Tensor, y: Tensor) -> dict[str, float]:
    """Accuracy (top-1; for one output, sigmoid > 0.5), F1 of the positive class (one output) and top-5
    accuracy (five outputs or more) of fused logits (n, out)."""
    out: dict[str, float] = {}
    if logits.shape[-1] == 1:
        pred = (logits[:, 0] > 0).long()  # sigmoid(z) > 0.5
        tp = float(((pred == 1) & (y == 1)).sum())
        wrong = float((pred != y).sum())
        out["test_accuracy"] = 1 - wrong / len(y)
        out["test_f1"] = 2 * tp / (2 * tp + wrong) if tp + wrong > 0 else 0.0
    else:
        out["test_accuracy"] = float((logits.argmax(-1) == y).double().mean())
        if logits.shape[-1] >= 5:
            out["test_top5"] = float((logits.topk(5, dim=-1).indices == y[:, None]).any(-1).double().mean())
    return out


class Environment:
    """The run's silo blocks on the compute device, and the per-seed pieces built from them."""

    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], ctx: RunContext) -> None:
        self.spec, self.device = spec, ctx.device
        self.dtype = DTYPES[spec.get("dtype", "float32")]
        N, axis = spec["N"], spec.get("split_axis", -1)
        arrays = model_inputs(spec, arrays)  # subsets, time pooling, uint8 images' levels
        x_train, x_test = arrays["x_train"], arrays["x_test"]
        if x_train.ndim < 2 or not -x_train.ndim < axis < x_train.ndim or axis % x_train.ndim == 0:
            raise ConfigError(f"split_axis: {axis} is not a feature axis of the data, shape {x_train.shape}")
        D = x_train.shape[axis]
        if N > D:
            raise ConfigError(f"N = {N} silos exceeds the {D} feature columns along split_axis {axis}")
        self.n_train, self.n_test = len(x_train), len(x_test)
        K = clients_per_silo(spec)
        limits = [(f"B = {spec['B']}", spec["B"]), (f"K = {max(K)}", max(K))]
        over = [f"{what} exceeds the {self.n_train} training IDs" for what, v in limits if v > self.n_train]
        if over:
            raise ConfigError("; ".join(over))
        self.K, self.sizes = K, split_sizes(D, N)

        def on(a: np.ndarray, dtype: torch.dtype) -> Tensor:
            # writable: torch warns on a read-only memmap (uint8 images are no longer copied into floats first)
            return torch.from_numpy(np.require(a, requirements="CW")).to(self.device, dtype)

        levels = on(arrays["levels"], self.dtype) if "levels" in arrays else None

        def inputs(part: np.ndarray) -> Tensor | Images:
            """uint8 images stay uint8 on the device (a quarter of float32), standardised a batch at a time."""
            return on(part, self.dtype) if levels is None else Images(on(part, torch.uint8), levels)

        def blocks(x: np.ndarray) -> list[np.ndarray]:
            parts = split_features(x, N, axis)
            # squeeze_split: blocks one column wide lose that axis, e.g. one view (C, S, S) per silo of
            # multi-view data (n, 12, C, S, S) split along axis 1
            return [np.squeeze(p, axis) for p in parts] if spec.get("squeeze_split", False) else parts

        if spec.get("squeeze_split", False) and D != N:
            raise ConfigError(f"squeeze_split needs one column per silo along split_axis {axis}: N = {N}, D = {D}")
        self.train = [inputs(part) for part in blocks(x_train)]
        self.test = [inputs(part) for part in blocks(x_test)]
        self.y_train, self.y_test = on(arrays["y_train"], torch.long), on(arrays["y_test"], torch.long)
        self.shapes = [tuple(part.shape[1:]) for part in self.train]
        self.key = lambda draw: keying("vertical").key(spec, draw)
        keep = spec.get("test_eval_subsample")
        self.test_index = None
        if keep is not None and keep < self.n_test:  # a fixed subset, the same for every seed and run
            rng = numpy_rng("test_eval", self.key("test_eval"))
            self.test_index = torch.from_numpy(np.sort(rng.choice(self.n_test, keep, replace=False))).to(self.device)

    def model_options(self) -> dict[str, int]:
        spec = self.spec
        if spec["model"] not in HIDDEN_MODELS:
            return {}
        hidden = spec.get("hidden_total", 64) // spec["N"]
        if hidden < 1:
            raise ConfigError(f"hidden_total = {spec.get('hidden_total', 64)} gives no hidden unit per silo at "
                              f"N = {spec['N']}")
        return {"hidden": hidden}

    def blocks(self, seed: int) -> list[StateLayout]:
        """Each silo's network, initialised independently per silo (docs/papers/tdcd.md R14) on the CPU, then moved."""
        spec, layouts = self.spec, []
        for j, shape in enumerate(self.shapes):
            module = seeded_model(spec["model"], shape, spec["out_dim"], "W0", spec["dataset"], spec.get("view"),
                                  spec["model"], spec["out_dim"], spec["N"], spec.get("split_axis", -1),
                                  spec.get("hidden_total", 64), j, seed, **self.model_options())
            layouts.append(StateLayout(module.to(self.device, self.dtype)))
        return layouts

    def train_eval_index(self, seed: int) -> Tensor | None:
        keep = self.spec["train_eval_subsample"]
        if keep is None or keep >= self.n_train:
            return None
        rng = numpy_rng("train_eval", self.key("train_eval"), seed)
        return torch.from_numpy(np.sort(rng.choice(self.n_train, keep, replace=False))).to(self.device)


class VerticalTrainer(Trainer):
    """One seed: its silo blocks, client assignment, the TDCD state and the evaluation sets."""

    def __init__(self, setup: VerticalSetup, seed: int) -> None:
        super().__init__([seed])
        spec, env = setup.spec, setup.env
        self.spec, self.env = spec, env
        self.layouts = env.blocks(seed)
        mode = spec.get("client_assignment", "shared")
        owners = assignment(env.n_train, env.K, mode, env.key("assignment"), seed)
        hubs = [layout.flatten() for layout in self.layouts]
        batch_key = env.key("batches")
        tiers = Tiers(self.layouts, env.train, env.y_train, [torch.from_numpy(o).to(env.device) for o in owners],
                      env.K, setup.backend)
        self.tdcd = setup.method.build(spec, tiers, lambda purpose, r: numpy_rng(purpose, batch_key, seed, r))
        self.state = self.tdcd.init()
        self.train_index = env.train_eval_index(seed)
        setup.summary["n_params"] = [layout.n_params for layout in self.layouts]
        self.info[seed].update({
            "W0_sha256": [array_digest(h.cpu().numpy()) for h in hubs],
            "assignment_sha256": array_digest(np.stack(owners)),
        })

    def advance(self, r: int) -> None:
        self.state, _ = self.tdcd.round(self.state, r)

    def _fused(self, states: list[Tensor], xs: list[Tensor], index: Tensor | None, n: int) -> Tensor:
        """Summed silo outputs (n, out) of the model `states` in eval mode, in batches."""
        chunks = []
        for s in range(0, n, EVAL_BATCH):
            rows = slice(s, s + EVAL_BATCH) if index is None else index[s : s + EVAL_BATCH]
            total = None
            for layout, state, x in zip(self.layouts, states, xs):
                out = layout.forward(state, x[rows], train=False)
                total = out if total is None else total + out
            chunks.append(total)
        return torch.cat(chunks)

    def evaluate(self, r: int) -> list[Row]:
        spec, env = self.spec, self.env
        states = self.tdcd.model(self.state)
        n_train = env.n_train if self.train_index is None else len(self.train_index)
        n_test = env.n_test if env.test_index is None else len(env.test_index)
        y_train = env.y_train if self.train_index is None else env.y_train[self.train_index]
        y_test = env.y_test if env.test_index is None else env.y_test[env.test_index]
        train = self._fused(states, env.train, self.train_index, n_train)
        test = self._fused(states, env.test, env.test_index, n_test)
        row: Row = {"seed": self.seeds[0], "iteration": r, "round": r // spec["Q"]}
        for c in spec["t_comm"]:
            row[time_column(c)] = time_at(r, spec["Q"], c, spec.get("t_comp", 1.0))
        row["train_loss"] = float(sample_losses(train, y_train).double().mean())
        row["test_loss"] = float(sample_losses(test, y_test).double().mean())
        row.update(eval_metrics(test, y_test))
        return [row]

    def state_dict(self) -> dict[str, Any]:
        return {"tdcd": self.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.state = restore(state["tdcd"], self.state)


class VerticalSetup(Setup):
    def __init__(self, spec: dict[str, Any], arrays: dict[str, np.ndarray], ctx: RunContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.method = method("vertical", spec.get("algorithm"))
        check_metric(spec)
        self.env = Environment(spec, arrays, ctx)
        probe = build_model(spec["model"], self.env.shapes[0], spec["out_dim"], **self.env.model_options())
        has_buffers = StateLayout(probe).has_buffers
        self.backend = silo_backend(spec["backend"], has_buffers)
        metrics = ["train_loss", "test_loss", "test_accuracy"]
        if spec["test_metric"] != "accuracy":
            metrics.append(TEST_METRIC[spec["test_metric"]])
        self.columns = ["seed", "iteration", "round", *(time_column(c) for c in spec["t_comm"]), *metrics]
        self.summary = {"backend": self.backend, "silo_columns": self.env.sizes, "clients": self.env.K,
                        "silo_input_shapes": [list(s) for s in self.env.shapes],
                        # the hub averages BatchNorm statistics too (the code keeps client 0's; docs/papers/tdcd.md R8)
                        "hub_average": "parameters and BatchNorm statistics" if has_buffers else "parameters"}
        ctx.log.info("backend %s, %d silos of inputs %s, clients %s, %d training IDs", self.backend, spec["N"],
                     self.env.shapes, self.env.K, self.env.n_train)

    def start(self, seeds: list[int]) -> Trainer:
        (seed,) = seeds
        return VerticalTrainer(self, seed)


def check_metric(spec: dict[str, Any]) -> None:
    metric, out = spec["test_metric"], spec["out_dim"]
    if metric == "f1" and out != 1:
        raise ConfigError(f"test_metric: f1 needs a binary task with out_dim 1 (BCE with logits), not {out}")
    if metric == "top5" and out < 5:
        raise ConfigError(f"test_metric: top5 needs out_dim >= 5, not {out}")


class VerticalEngine(Engine):
    name = "vertical"
    schema = "vertical_run.schema.yaml"
    # `time`: a figure table's copy of one time_tc<c> per panel (results/tables.py x_source)
    x = TimeColumns(("iteration", "round", "time"))
    metrics = METRICS
    watch = "train_loss"
    steps_key = "iterations"
    trains_networks = True
    # per client-step (one client of one silo, one local iteration): twice the slowest measured on a GPU, the paper
    # scale's CIFAR-10 ResNet-18 halves at 16 ms on an H200 (docs/performance.md, "The paper scale on a GPU")
    ms_per_client_step = 35

    def runtime_minutes(self, spec: dict[str, Any]) -> int:
        steps = spec["seeds"] * spec["iterations"] * sum(clients_per_silo(spec))
        return 10 + int(steps * self.ms_per_client_step / 60_000)

    def limits(self, spec: dict[str, Any]) -> list[Limit]:
        limits = []
        if isinstance(spec.get("eval_dense_until"), int):
            limits.append(Limit("eval_dense_until", spec["eval_dense_until"], spec["iterations"], "iterations"))
        return limits

    def lengths(self, spec: dict[str, Any]) -> list[Length]:
        return [Length("K", spec["N"], "silo (N)")]

    def setup(self, spec, arrays, ctx) -> Setup:
        return VerticalSetup(spec, arrays, ctx)

    def describe(self, row: Row) -> str:
        extra = ", ".join(f"{k} {row[k]:.4f}" for k in ("test_accuracy", "test_f1", "test_top5") if k in row)
        return f"train loss {row['train_loss']:.4f}, {extra}"


__all__ = ["VerticalEngine", "assignment", "clients_per_silo", "eval_metrics"]
