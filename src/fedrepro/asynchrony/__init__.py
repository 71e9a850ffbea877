"""Timing phase of asynchronous FL simulation (DeFedAvg paper §4.1.3; docs/engines.md): a discrete-event
simulation of who trains, uploads and is aggregated when, independent of model values. The learning phase replays the
resulting Trace; see trace.py for what a record means."""

from fedrepro.asynchrony.simulate import PROTOCOLS, Protocol, simulate
from fedrepro.asynchrony.system import SPEED_MODELS, SystemModel
from fedrepro.asynchrony.trace import TIMELINE_KINDS, Timeline, Trace

__all__ = [
    "PROTOCOLS", "SPEED_MODELS", "TIMELINE_KINDS", "Protocol", "SystemModel", "Timeline", "Trace", "simulate",
]
