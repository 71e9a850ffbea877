"""What a running experiment may touch: its random streams, checkpoints and progress."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from fedrepro.experiments.runtable import run_id_of
from fedrepro.experiments.seeding import torch_generator
from fedrepro.utils.atomic import atomic_path

# Keys that do not change any random draw: a 5-seed run's seed 0 is then the same
# trajectory as a 2-seed run's seed 0, and evaluating more often changes nothing.
NOT_IN_STREAM_KEY = ("seeds", "eval_every", "checkpoint_every")


def resolve_device(requested: str) -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: cuda was requested but torch finds no CUDA device; use device: auto or cpu")
    return requested


def stream_key(spec: dict[str, Any]) -> str:
    return run_id_of({k: v for k, v in spec.items() if k not in NOT_IN_STREAM_KEY})


@dataclass
class RunContext:
    run_id: str
    spec: dict[str, Any]
    device: str
    checkpoint_path: Path
    log: logging.Logger
    show_progress: bool = field(default_factory=lambda: sys.stderr.isatty())

    def streams(self, seed: int):
        """streams(purpose, round) for one seed: a generator per (run, seed, purpose, round)."""
        key = stream_key(self.spec)

        def make(purpose: str, rnd: int, client: int | None = None) -> torch.Generator:
            return torch_generator(key, seed, purpose, rnd, client, device=self.device)

        return make

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        with atomic_path(self.checkpoint_path, suffix=".pt") as tmp:
            torch.save(state, tmp)

    def load_checkpoint(self) -> dict[str, Any] | None:
        if not self.checkpoint_path.exists():
            return None
        state = torch.load(self.checkpoint_path, map_location=self.device, weights_only=True)
        if state.get("run_id") != self.run_id:
            self.log.warning("ignoring checkpoint of another run (%s)", state.get("run_id"))
            return None
        return state

    def progress(self, total: int, desc: str):
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, disable=not self.show_progress, mininterval=1.0,
                    dynamic_ncols=True, leave=False)
