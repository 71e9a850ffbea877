"""Random streams derived from names, never from global state or the clock.

A stream is identified by (run_id, purpose, round, client, ...). Its seed is a hash of
those parts, so a draw does not depend on job order, batching or parallelism.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from fedrepro.utils.digest import config_digest

if TYPE_CHECKING:  # torch only where a torch stream is drawn: the table, plot and claims jobs never load it
    import torch

# A run's random streams as its numerics draw them: streams(purpose, *keys) -> a fresh torch.Generator for the
# run's seed, that purpose and those keys (the round; the client, or the Monte Carlo run, where draws need it)
Streams = Callable[..., "torch.Generator"]


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the parts' text, stable across processes and platforms."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little") >> 1


def torch_generator(*parts: object, device: str | torch.device = "cpu") -> torch.Generator:
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(derive_seed(*parts))
    return gen


def numpy_rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(*parts))


# Spec keys that change no random draw: a 5-seed run's seed 0 is then the same trajectory as a 2-seed
# run's seed 0, seed 3 the same whether a run starts at seed 0 or at seed 3 (`first_seed`), evaluating more
# often changes nothing, and a resumed run draws what it would have.
NOT_IN_STREAM_KEY = ("seeds", "first_seed", "eval_every", "eval_dense_until", "eval_dense_every", "checkpoint_every")


def seeds_of(spec: dict[str, Any]) -> list[int]:
    """The seeds a run trains: `seeds` of them from `first_seed` (default 0), so that runs of one setting can
    hold disjoint seeds (a tuning's apart from the judged ones; more seeds added as a run of their own)."""
    first = spec.get("first_seed", 0)
    return list(range(first, first + spec["seeds"]))


def stream_key(spec: dict[str, Any]) -> str:
    """The part of a run's identity that keys its random streams (the same hash as its run_id when it
    has none of NOT_IN_STREAM_KEY)."""
    return config_digest({k: v for k, v in spec.items() if k not in NOT_IN_STREAM_KEY})


@dataclass(frozen=True)
class Keying:
    """Which settings of a run key its random streams, besides the seed, the purpose and the round: `only` these,
    or (`only` None) every setting but `ignored` (and NOT_IN_STREAM_KEY). Runs that differ only in settings that
    key no stream draw the same clients, minibatches and coins, so comparing them is paired. `draws` names the
    draws keyed by settings of their own (TDCD's minibatches by the data and B alone), each with its list. A
    setting a run lacks keys as None. Each engine declares one (numerics.py KEYING)."""

    only: tuple[str, ...] | None = None
    ignored: tuple[str, ...] = ()
    draws: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def settings(self, spec: Mapping[str, Any], draw: str | None = None) -> dict[str, Any]:
        """The settings that key the run's streams, or the draw `draw`'s."""
        if draw is not None:
            return {k: spec.get(k) for k in self.draws[draw]}
        if self.only is not None:
            return {k: spec.get(k) for k in self.only}
        return {k: v for k, v in spec.items() if k not in self.ignored}

    def key(self, spec: Mapping[str, Any], draw: str | None = None) -> str:
        """The key of the run's streams (or of the draw `draw`): stream_key of their settings."""
        return stream_key(self.settings(spec, draw))

    def keys(self, setting: str) -> bool:
        """Whether `setting` keys any stream or draw: runs that differ in it alone are not paired (the operational
        settings of NOT_IN_STREAM_KEY aside, which no stream reads)."""
        if any(setting in names for names in self.draws.values()):
            return True
        return setting not in self.ignored if self.only is None else setting in self.only
