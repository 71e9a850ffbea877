"""The run loop every engine shares (engines/driver.py), on a toy engine whose answers are known:
evaluation cadence in rounds and in simulated time, divergence of single and batched seeds, resume."""

from __future__ import annotations

import copy
import logging
import math
import time

import pytest

from fedrepro.engines.context import RunContext
from fedrepro.engines.contract import Engine, Setup, Trainer
from fedrepro.engines.driver import run_seeds
from fedrepro.seeding import stream_key


class Toy(Trainer):
    """x_{r+1} = growth * x_r for every seed of the group; each round takes `dt` simulated seconds."""

    def __init__(self, seeds, growth, dt):
        super().__init__(seeds)
        self.x = {s: 1.0 + s for s in seeds}
        self.growth, self.dt, self.rounds_done = growth, dt, 0

    def advance(self, r):
        assert r == self.rounds_done
        self.x = {s: v * self.growth for s, v in self.x.items()}
        self.rounds_done += 1

    def evaluate(self, r):
        return [{"seed": s, "round": r, "x": v} for s, v in self.x.items()]

    def clock(self, r):
        return None if self.dt is None else r * self.dt

    def state_dict(self):
        return {"x": dict(self.x), "rounds_done": self.rounds_done}

    def load_state_dict(self, state):
        self.x, self.rounds_done = dict(state["x"]), state["rounds_done"]


class ToySetup(Setup):
    columns = ["seed", "round", "virtual_time", "x"]

    def __init__(self, growth=2.0, dt=None, batched=False):
        self.growth, self.dt, self.batched, self.summary = growth, dt, batched, {"toy": True}

    def start(self, seeds):
        return Toy(seeds, self.growth, self.dt)


class ToyEngine(Engine):
    name, watch = "toy", "x"

    def __init__(self, batched=False):
        self.batched = batched

    def seed_groups(self, seeds):
        return [seeds] if self.batched else super().seed_groups(seeds)


def run(tmp_path, setup, **spec):
    spec = {"rounds": 10, "seeds": 2, **spec}
    ctx = RunContext("toy", spec, "cpu", tmp_path / "checkpoint.pt", logging.getLogger("toy"), show_progress=False)
    return run_seeds(ToyEngine(setup.batched), setup, spec, ctx)


def test_rounds_cadence_logs_first_last_and_every_k(tmp_path):
    rows, summary = run(tmp_path, ToySetup(), eval_every=4)
    assert [r["round"] for r in rows if r["seed"] == 0] == [0, 4, 8, 10]
    assert rows[3]["x"] == 2.0**10 and [r["seed"] for r in rows] == [0] * 4 + [1] * 4
    assert summary == {"toy": True, "seeds": {"0": {"diverged_at": None}, "1": {"diverged_at": None}}}


def test_first_seed_shifts_the_seeds_a_run_trains_and_keeps_each_seeds_streams(tmp_path):
    rows, summary = run(tmp_path, ToySetup(), eval_every=10, seeds=2, first_seed=3)
    assert [r["seed"] for r in rows] == [3, 3, 4, 4] and set(summary["seeds"]) == {"3", "4"}
    assert rows == [r for r in run(tmp_path / "all", ToySetup(), eval_every=10, seeds=5)[0] if r["seed"] >= 3]
    # seed 3 draws from the same streams whichever run trains it (seeding.NOT_IN_STREAM_KEY)
    spec = {"rounds": 10, "seeds": 5, "lr": 0.1}
    assert stream_key(spec) == stream_key({**spec, "seeds": 2, "first_seed": 3}) != stream_key({**spec, "lr": 0.2})


def test_time_cadence_evaluates_the_model_current_at_each_checkpoint_time(tmp_path):
    rows, _ = run(tmp_path, ToySetup(dt=0.7), eval_every_time=2.0, time_horizon=6.0, seeds=1)
    # round r's model is current on [0.7 r, 0.7 (r + 1)): t = 0 -> r = 0, 2 -> 2, 4 -> 5, 6 -> 8
    assert [(r["virtual_time"], r["round"]) for r in rows] == [(0.0, 0), (2.0, 2), (4.0, 5), (6.0, 8)]
    assert [r["x"] for r in rows] == [2.0**r for r in (0, 2, 5, 8)]


def test_a_round_spanning_several_checkpoints_is_evaluated_once_per_checkpoint(tmp_path, monkeypatch):
    evaluations = []
    monkeypatch.setattr(Toy, "evaluate", lambda self, r: evaluations.append(r) or [{"seed": 0, "round": r, "x": 1.0}])
    rows, _ = run(tmp_path, ToySetup(dt=5.0), eval_every_time=2.0, time_horizon=9.0, seeds=1)
    assert [(r["virtual_time"], r["round"]) for r in rows] == [(0.0, 0), (2.0, 0), (4.0, 0), (6.0, 1), (8.0, 1)]
    assert evaluations == [0, 1]


def test_checkpoint_times_are_exact_multiples(tmp_path):
    rows, _ = run(tmp_path, ToySetup(dt=0.1), eval_every_time=0.1, time_horizon=0.3, seeds=1)
    assert [r["round"] for r in rows] == [0, 1, 2, 3]  # H = 0.3 = 3 x 0.1 up to rounding, whichever way
    assert [r["virtual_time"] for r in rows] == pytest.approx([0.0, 0.1, 0.2, 0.3])


def test_a_single_seed_stops_where_it_diverges(tmp_path):
    rows, summary = run(tmp_path, ToySetup(growth=10.0), eval_every=1, divergence_threshold=500.0)
    # seed 0: 1, 10, 100, 1000 -> diverged at round 3; seed 1: 2, 20, 200, 2000 -> round 3 too
    assert [r["round"] for r in rows if r["seed"] == 0] == [0, 1, 2, 3]
    assert summary["seeds"]["0"]["diverged_at"] == 3


def test_batched_seeds_carry_on_until_all_diverged(tmp_path):
    rows, summary = run(tmp_path, ToySetup(growth=10.0, batched=True), eval_every=1, seeds=3,
                        divergence_threshold=2500.0)
    # seed 0 passes 2500 at round 4 (10000), seeds 1 and 2 at round 3 (2000 < 2500 <= 3000)
    assert {s: v["diverged_at"] for s, v in summary["seeds"].items()} == {"0": 4, "1": 4, "2": 3}
    assert [r["round"] for r in rows if r["seed"] == 2] == [0, 1, 2, 3, 4]  # logged with the others
    assert [r["seed"] for r in rows] == sorted(r["seed"] for r in rows)  # seed-major, as single seeds


def test_non_finite_values_diverge_without_a_threshold(tmp_path):
    _, summary = run(tmp_path, ToySetup(growth=math.inf), eval_every=5)
    assert summary["seeds"]["0"]["diverged_at"] == 5


@pytest.mark.parametrize("batched", [False, True])
def test_resume_from_every_checkpoint_gives_the_same_rows(tmp_path, batched, monkeypatch):
    spec = dict(seeds=2, checkpoint_every=2, eval_every_time=1.2, time_horizon=5.0)
    reference, _ = run(tmp_path / "ref", ToySetup(dt=0.5, batched=batched), **spec)
    saves = []
    monkeypatch.setattr(RunContext, "save_checkpoint", lambda self, state: saves.append(copy.deepcopy(state)))
    run(tmp_path / "collect", ToySetup(dt=0.5, batched=batched), **spec)
    monkeypatch.undo()
    assert len(saves) == (4 if batched else 8)  # rounds 2, 4, 6, 8; round 10, current at t = H, is the last
    for state in saves:  # resume from each checkpoint as if the run had been killed right after it
        monkeypatch.setattr(RunContext, "load_checkpoint", lambda self, s=state: s)
        resumed, _ = run(tmp_path / "resume", ToySetup(dt=0.5, batched=batched), **spec)
        assert resumed == reference


def test_a_resumed_run_counts_the_wall_time_of_the_attempt_it_resumed_from(tmp_path):
    first = RunContext("toy", {}, "cpu", tmp_path / "checkpoint.pt", logging.getLogger("toy"),
                       started=time.perf_counter() - 100.0)  # an attempt that ran 100 s, then was killed
    first.save_checkpoint({"round": 7})
    second = RunContext("toy", {}, "cpu", tmp_path / "checkpoint.pt", logging.getLogger("toy"))
    assert second.wall_seconds() < 100.0
    assert second.load_checkpoint()["round"] == 7
    assert 100.0 <= second.wall_seconds() < 200.0


class OverlappingToy(Toy):
    """A Toy whose evaluation runs beside the next round (Trainer.overlaps_evaluation): its values are taken at
    launch, read later; `events` logs the order of launches, advances and reads; each advance counts into info."""

    overlaps_evaluation = True

    def __init__(self, seeds, growth, dt, events):
        super().__init__(seeds, growth, dt)
        self.events = events

    def advance(self, r):
        super().advance(r)
        self.events.append(("advance", r))
        for s in self.seeds:
            self.info[s]["advances"] = self.rounds_done

    def launch_evaluation(self, r):
        self.events.append(("launch", r))
        rows = self.evaluate(r)
        return lambda: self.events.append(("read", r)) or rows


class OverlappingSetup(ToySetup):
    def __init__(self, overlap, **kwargs):
        super().__init__(**kwargs)
        self.overlap, self.events = overlap, []

    def start(self, seeds):
        trainer = OverlappingToy(seeds, self.growth, self.dt, self.events)
        trainer.overlaps_evaluation = self.overlap
        return trainer


@pytest.mark.parametrize("spec", [
    dict(eval_every=3),
    dict(eval_every_time=1.2, time_horizon=5.0, checkpoint_every=2),
    dict(eval_every=1, divergence_threshold=500.0, growth=10.0),  # every seed stops at round 3 (1000, 2000)
    dict(eval_every=1, divergence_threshold=2500.0, growth=10.0, batched=True, seeds=3),
], ids=["rounds", "time", "diverging", "diverging-batched"])
def test_an_overlapped_evaluation_is_read_after_the_next_round_and_changes_nothing(tmp_path, spec):
    setup = {k: spec.pop(k) for k in ("growth", "batched") if k in spec}
    setup["dt"] = 0.5 if "time_horizon" in spec else None
    serial, overlapped = OverlappingSetup(False, **setup), OverlappingSetup(True, **setup)
    assert run(tmp_path / "serial", serial, **spec) == run(tmp_path / "overlapped", overlapped, **spec)
    assert all(what == "launch" for what, _ in before_reads(serial.events))  # each read at once
    before = before_reads(overlapped.events)
    deferred = [e for e, r in zip(before, [r for what, r in overlapped.events if what == "read"]) if e == ("advance", r)]
    groups = 1 if setup.get("batched") else spec.get("seeds", 2)
    # every read after the advance of its own round, but a group's last if due at its end (no advance follows it)
    assert deferred and len(deferred) >= len(before) - groups
    assert all(e in deferred or e[0] == "launch" for e in before)


def before_reads(events):
    """The event before each read."""
    return [events[i - 1] for i, (what, _) in enumerate(events) if what == "read"]


def test_an_overlapped_evaluation_resumes_from_every_checkpoint_to_the_same_rows(tmp_path, monkeypatch):
    spec = dict(seeds=2, checkpoint_every=2, eval_every=1)
    reference = run(tmp_path / "ref", OverlappingSetup(False), **spec)
    saves = []
    monkeypatch.setattr(RunContext, "save_checkpoint", lambda self, state: saves.append(copy.deepcopy(state)))
    run(tmp_path / "collect", OverlappingSetup(True), **spec)
    monkeypatch.undo()
    assert len(saves) == 8  # rounds 2, 4, 6, 8 of each seed
    for state in saves:
        monkeypatch.setattr(RunContext, "load_checkpoint", lambda self, s=state: s)
        assert run(tmp_path / "resume", OverlappingSetup(True), **spec) == reference
