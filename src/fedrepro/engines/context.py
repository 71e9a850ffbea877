"""What a running experiment may touch: its device, random streams, checkpoint file and log."""

from __future__ import annotations

import io
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from fedrepro.errors import ConfigError
from fedrepro.seeding import stream_key, torch_generator
from fedrepro.utils import atomic

# bumped when the checkpoint layout changes: an older checkpoint is then ignored, not misread
CHECKPOINT_FORMAT = 3  # 3: a method's state as the engine holds it (algorithms/method.py; TDCD keeps all its keys)


def resolve_device(requested: str) -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: 'cuda' was requested but torch finds no CUDA device on this machine; "
                          "use device auto or cpu")
    return requested


# The float settings every run trains under, set by the run (execute_run) rather than left to torch's defaults, which
# may change between releases; they act on CUDA only. These are torch 2.11-2.13's defaults, kept until measured
# better (docs/performance.md, "The paper scale on a GPU", one H200 session): TF32 in cuDNN's convolutions made
# FedCluster's AlexNet step 1.44x faster, left DeFedAvg's CNN step as it was, and TDCD's CIFAR-10 iteration 1.46x
# slower (measured once; the cause is not established). Matmuls stay in full fp32. cuDNN's autotuner stays off: it picks
# kernels by timing them, so by chance, and re-tunes at every new batch shape (DeFedAvg's client layer: 0.80x).
FLOAT_SETTINGS = {"matmul_allow_tf32": False, "cudnn_allow_tf32": True, "cudnn_benchmark": False,
                  "cudnn_deterministic": False}


def pin_float_settings() -> None:
    """Set FLOAT_SETTINGS in torch (they are recorded with every run: provenance.float_settings)."""
    torch.backends.cuda.matmul.allow_tf32 = FLOAT_SETTINGS["matmul_allow_tf32"]
    torch.backends.cudnn.allow_tf32 = FLOAT_SETTINGS["cudnn_allow_tf32"]
    torch.backends.cudnn.benchmark = FLOAT_SETTINGS["cudnn_benchmark"]
    torch.backends.cudnn.deterministic = FLOAT_SETTINGS["cudnn_deterministic"]


@dataclass
class RunContext:
    run_id: str
    spec: dict[str, Any]
    device: str
    checkpoint_path: Path
    log: logging.Logger
    show_progress: bool = field(default_factory=lambda: sys.stderr.isatty())
    started: float = field(default_factory=time.perf_counter)  # when this attempt at the run began
    earlier_seconds: float = 0.0  # wall seconds of the attempts before it, read from their checkpoint

    def wall_seconds(self) -> float:
        """The run's wall time so far, over every attempt (a resumed run counts what it resumed from)."""
        return self.earlier_seconds + time.perf_counter() - self.started

    def streams(self, seed: int, keys: tuple[str, ...] | None = None):
        """streams(purpose, round, client=None) for one seed: a generator per (run, seed, purpose, round,
        client). With `keys`, only those settings key the streams, so runs that differ elsewhere (e.g. in
        the method) draw the same devices, activations and minibatches: their comparisons are paired."""
        key = stream_key(self.spec if keys is None else {k: self.spec[k] for k in keys})

        def make(purpose: str, rnd: int, client: int | None = None) -> torch.Generator:
            return torch_generator(key, seed, purpose, rnd, client, device=self.device)

        return make

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        # serialised in memory, written by Python: a full disk is an OSError naming the file (torch's own
        # writer reports it as "[enforce fail at inline_container.cc] unexpected pos")
        buffer = io.BytesIO()
        torch.save({**state, "run_id": self.run_id, "format": CHECKPOINT_FORMAT, "wall_seconds": self.wall_seconds()},
                   buffer)
        atomic.write_bytes(self.checkpoint_path, buffer.getvalue())

    def load_checkpoint(self) -> dict[str, Any] | None:
        if not self.checkpoint_path.exists():
            return None
        state = torch.load(self.checkpoint_path, map_location=self.device, weights_only=True)
        if state.get("run_id") != self.run_id or state.get("format") != CHECKPOINT_FORMAT:
            self.log.warning("ignoring checkpoint %s: another run's or an older layout", self.checkpoint_path)
            return None
        self.earlier_seconds = float(state.get("wall_seconds", 0.0))
        return state

    def progress(self, total: int, desc: str):
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, disable=not self.show_progress, mininterval=1.0,
                    dynamic_ncols=True, leave=False)
