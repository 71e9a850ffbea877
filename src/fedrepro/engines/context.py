"""What a running experiment may touch: its device, random streams, checkpoint file and log."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedrepro.errors import ConfigError, ResultsError
from fedrepro.numerics import keying, numerics_version
from fedrepro.seeding import torch_generator
from fedrepro.training_code import code_sha256
from fedrepro.utils import atomic

# bumped when the checkpoint layout changes: an older checkpoint is then ignored, not misread
# 3: a method's state as the engine holds it (algorithms/method.py; TDCD keeps all its keys); 4: a header line
# before the payload with the payload's sha256 and the code identity (code_identity), checked before loading
CHECKPOINT_FORMAT = 4
CHECKPOINT_MAGIC = b"fedrepro checkpoint\n"


def code_identity(engine: str) -> dict[str, Any]:
    """What a checkpoint of `engine` must have been saved by to be resumed: the engine's numerics version, the
    sources that decide its floats (training_code.py: run.json records the same hash) and the numerical packages'
    versions. A checkpoint saved by other code is not resumed, so a job interrupted before a fix never ends on the
    rows of the code before it."""
    return {"numerics": numerics_version(engine), "sources_sha256": code_sha256(engine),
            "torch": torch.__version__, "numpy": np.__version__}


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
    # the checkpoints the run resumed from, earliest first (run.json's `resumed`): a checkpoint's payload_sha256
    # shows it was not damaged, not that this run saved it, so a resumed run says so and a rerun starts at round 0
    resumed: list[dict[str, Any]] = field(default_factory=list)

    def wall_seconds(self) -> float:
        """The run's wall time so far, over every attempt (a resumed run counts what it resumed from)."""
        return self.earlier_seconds + time.perf_counter() - self.started

    def streams(self, seed: int):
        """streams(purpose, round, client=None) for one seed: a generator per (run, seed, purpose, round,
        client). Only the settings that key the run's engine's streams (numerics.py KEYING) key them, so runs
        that differ elsewhere (e.g. in the method) draw the same devices, activations and minibatches: their
        comparisons are paired."""
        key = keying(self.spec.get("engine", "")).key(self.spec)

        def make(purpose: str, rnd: int, client: int | None = None) -> torch.Generator:
            return torch_generator(key, seed, purpose, rnd, client, device=self.device)

        return make

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """The state as one file: a header line (CHECKPOINT_FORMAT, the run id, the code identity and the sha256 of
        the payload) and the payload, torch.save of the state (torch.load does not check an archive's checksums)."""
        # serialised in memory, written by Python: a full disk is an OSError naming the file (torch's own
        # writer reports it as "[enforce fail at inline_container.cc] unexpected pos")
        buffer = io.BytesIO()
        torch.save({**state, "wall_seconds": self.wall_seconds(), "resumed": self.resumed}, buffer)
        payload = buffer.getvalue()
        header = {"format": CHECKPOINT_FORMAT, "run_id": self.run_id, "code": code_identity(self.spec.get("engine", "")),
                  "payload_sha256": hashlib.sha256(payload).hexdigest()}
        atomic.write_bytes(self.checkpoint_path, CHECKPOINT_MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n"
                           + payload)

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The saved state, or None (start from round 0) where there is none or it is not this run's, by this
        code, as saved: the reason is logged. A file that cannot be read is a ResultsError naming it."""
        path = self.checkpoint_path
        if not path.exists():
            return None
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ResultsError(f"{path}: the checkpoint cannot be read ({error.strerror or error}); remove it to start "
                               f"the run from round 0") from None
        header, payload, why = _checkpoint_parts(data)
        if why is None:
            why = _checkpoint_mismatch(header, payload, self.run_id, code_identity(self.spec.get("engine", "")))
        if why is not None:
            self.log.warning("ignoring checkpoint %s: %s; starting from round 0", path, why)
            return None
        try:
            state = torch.load(io.BytesIO(payload), map_location=self.device, weights_only=True)
        except Exception as error:  # noqa: BLE001 - hashed as saved, yet torch cannot read it: name the file
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ResultsError(f"{path}: the checkpoint cannot be read ({first}); remove it to start the run from "
                               f"round 0") from None
        self.earlier_seconds = float(state.get("wall_seconds", 0.0))
        self.resumed = [*state.get("resumed", []), {"checkpoint": path.name, "payload_sha256": header["payload_sha256"],
                                                    "group": state.get("group"), "round": state.get("round")}]
        return state

    def progress(self, total: int, desc: str):
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, disable=not self.show_progress, mininterval=1.0,
                    dynamic_ncols=True, leave=False)


def _checkpoint_parts(data: bytes) -> tuple[dict[str, Any], bytes, str | None]:
    """A checkpoint file's header and payload, and why it is not one (None: it is)."""
    if not data.startswith(CHECKPOINT_MAGIC):
        return {}, b"", f"not a checkpoint of format {CHECKPOINT_FORMAT} (an older layout, or another file)"
    line, newline, payload = data[len(CHECKPOINT_MAGIC):].partition(b"\n")
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not newline or not isinstance(header, dict):
        return {}, b"", "its header is damaged"
    return header, payload, None


def _checkpoint_mismatch(header: dict[str, Any], payload: bytes, run_id: str, code: dict[str, Any]) -> str | None:
    """Why a checkpoint with this header and payload may not be resumed by run `run_id` on `code` (None: it may)."""
    if header.get("format") != CHECKPOINT_FORMAT:
        return f"its format is {header.get('format')!r}, this fedrepro reads {CHECKPOINT_FORMAT}"
    if header.get("run_id") != run_id:
        return f"it is run {header.get('run_id')!r}'s"
    saved = header.get("code") or {}
    changed = [f"{key} {saved.get(key)!r} -> {code[key]!r}" for key in code if saved.get(key) != code[key]]
    if changed:
        return "it was saved by other code (" + ", ".join(changed) + ")"
    actual = hashlib.sha256(payload).hexdigest()
    if actual != header.get("payload_sha256"):
        return (f"its content hashes to sha256 {actual}, but it recorded {header.get('payload_sha256')} (changed or "
                f"damaged after it was saved)")
    return None
