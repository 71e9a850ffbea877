"""`fedrepro cost --gpus N`: each network run's work counted from its spec (and DeFedAvg's traces), priced at the
GPU rates benchmarks/gpu_throughput.py records, and packed onto N GPUs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fedrepro.cli import main
from fedrepro.engines.asynchronous import trace_of
from fedrepro.results import gpu_cost
from fedrepro.validate import load_and_validate

ROOT = Path(__file__).resolve().parents[2]


def _runs(scale: str) -> dict:
    _, table = load_and_validate({"scale": scale}, ROOT / "config")
    return table.runs


def _rate(workload: str, steps_per_s: float, eval_s: float) -> dict:
    return {"workload": workload, "card": "NVIDIA H200", "date": "2026-11-27", "client_steps_per_s": steps_per_s,
            "tflops": 1.0, "eval_seconds": eval_s, "eval_seconds_full": eval_s}


def test_a_fedcluster_run_counts_its_clients_steps_and_evaluations():
    runs = _runs("paper")
    rid, spec = next((r, s) for r, s in runs.items() if s["paper"] == "fedcluster" and s["algorithm"] == "fedavg")
    rates = {"fedcluster_100": _rate("fedcluster_100", 1000.0, 2.0)}
    cost = gpu_cost.run_cost(rid, spec, rates)
    per_seed = round(spec["frac"] * spec["n_devices"]) * spec["E"] * spec["rounds"]  # 100 clients x 20 steps x 100
    assert cost.client_steps == per_seed * spec["seeds"] and cost.workload == "fedcluster_100"
    evaluations = (spec["rounds"] // spec["eval_every"] + 1) * spec["seeds"]
    assert cost.evaluations == evaluations
    assert math.isclose(cost.seconds, cost.client_steps / 1000.0 + evaluations * 2.0)
    assert math.isnan(gpu_cost.run_cost(rid, spec, {}).seconds)  # no rate, no price


def test_a_defedavg_runs_steps_come_from_a_share_of_its_trace():
    """A long run's from the first 2% of its horizon, scaled up (within 5% of its whole trace's at the paper scale,
    docs/performance.md); a short run of rounds's from its whole trace."""
    runs = list(_runs("paper").values())
    long = next(s for s in runs if s["paper"] == "defedavg" and s.get("time_horizon") == 880.0
                and s["algorithm"] == "defedavg_iid" and s["n"] == 10)
    assert gpu_cost._async_steps(long) == pytest.approx(float(trace_of(long, 0).n_steps.sum()), rel=0.05)
    short = next(s for s in runs if s["paper"] == "defedavg" and s.get("rounds", 10**6) < gpu_cost.MIN_ROUNDS)
    assert gpu_cost._async_steps(short) == float(trace_of(short, 0).n_steps.sum())


def test_jobs_are_packed_onto_the_gpus_longest_first():
    jobs = [3.0, 3.0, 2.0, 2.0, 2.0]
    assert gpu_cost.makespan(jobs, 1) == sum(jobs)
    assert gpu_cost.makespan(jobs, 2) == 7.0  # longest first: (3, 2, 2) and (3, 2)
    assert gpu_cost.makespan(jobs, 10) == 3.0  # never below the longest job


def test_the_cli_plans_the_paper_scale_from_the_recorded_rates(tmp_path, monkeypatch, capsys):
    records = tmp_path / "gpu_throughput.jsonl"
    older = _rate("fedcluster_10", 1.0, 1.0) | {"date": "2026-01-01"}
    lines = [older, _rate("fedcluster_10", 3000.0, 0.2), _rate("fedcluster_100", 3400.0, 0.2),
             _rate("defedavg_fmnist", 18000.0, 0.05), _rate("defedavg_cifar10", 16000.0, 0.05)]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    monkeypatch.setattr(gpu_cost, "RECORDS", records)
    monkeypatch.chdir(ROOT)
    main(["cost", "--scale", "paper", "--gpus", "4"])
    out = capsys.readouterr().out
    assert "## GPU plan: 4 GPUs" in out and "| fedcluster | 60 | 60 |" in out
    assert "| tdcd | 26 | 0 |" in out and "No measured rate for 26 runs" in out  # TDCD's rates were not given
    assert "| fedcluster_10 | NVIDIA H200 | 2026-11-27 | 3000.0 |" in out  # the newest record of a workload
    four_gpus = out
    main(["cost", "--scale", "paper", "--gpus", "1"])
    cells = lambda text: [float(c) for c in text.split("| fedcluster | 60 | 60 |")[1].split("|")[1:3]]  # noqa: E731
    (hours_1, wall_1), (hours_4, wall_4) = cells(capsys.readouterr().out), cells(four_gpus)
    # GPU-hours do not depend on the GPUs; on one GPU the wall time is the GPU-hours (the table rounds them to 0.1, it
    # to 0.01)
    assert hours_1 == hours_4 and wall_1 == pytest.approx(hours_1, abs=0.05) and wall_4 < wall_1


def test_without_recorded_rates_the_cli_says_how_to_get_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu_cost, "RECORDS", tmp_path / "none.jsonl")
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as stop:
        main(["cost", "--scale", "paper", "--gpus", "2"])
    assert stop.value.code == 1
    assert "no GPU rates recorded; run benchmarks/gpu_throughput.py --record" in capsys.readouterr().err


def test_every_paper_scale_job_asks_for_more_time_than_the_recorded_rates_take():
    """A cluster kills a job at its runtime (Engine.runtime_minutes): at the rates measured on a GPU
    (benchmarks/records/), every network run of the paper scale must fit in the time its job asks for."""
    rates = gpu_cost.load_rates(ROOT / gpu_cost.RECORDS)
    over = []
    for rid, spec in _runs("paper").items():
        if spec["engine"] in ("federated_nn", "async", "vertical"):
            cost = gpu_cost.run_cost(rid, spec, rates)
            if cost.workload and cost.seconds / 60 > cost.limit_minutes:
                over.append(f"{rid} ({spec['paper']}): {cost.seconds / 60:.0f} min > {cost.limit_minutes}")
    assert not over, over


def test_seed_workers_price_a_job_in_waves_at_the_rate_of_that_many_processes(tmp_path):
    """K seeds at once: ceil(seeds / K) waves, each seed at 1/K of the K processes' summed rate; a workload
    measured only alone has no price at K, and a K-process record never stands for one process."""
    runs = _runs("paper")
    rid, spec = next((r, s) for r, s in runs.items() if s["paper"] == "fedcluster" and s["algorithm"] == "fedavg")
    assert spec["seeds"] == 5
    records = tmp_path / "gpu_throughput.jsonl"
    alone, two = _rate("fedcluster_100", 1000.0, 2.0), _rate("fedcluster_100", 1500.0, 3.0) | {"processes": 2}
    records.write_text(json.dumps(alone) + "\n" + json.dumps(two) + "\n")
    assert gpu_cost.load_rates(records)["fedcluster_100"]["client_steps_per_s"] == 1000.0
    rates_2 = gpu_cost.load_rates(records, processes=2)
    per_seed = round(spec["frac"] * spec["n_devices"]) * spec["E"] * spec["rounds"]
    evaluations = spec["rounds"] // spec["eval_every"] + 1
    cost = gpu_cost.run_cost(rid, spec, rates_2, seed_workers=2)
    assert math.isclose(cost.seconds, 3 * (per_seed / 750.0 + evaluations * 3.0))  # waves of 2, 2 and 1 seeds
    alone_cost = gpu_cost.run_cost(rid, spec, gpu_cost.load_rates(records))
    assert math.isclose(alone_cost.seconds, 5 * (per_seed / 1000.0 + evaluations * 2.0))
    assert gpu_cost.load_rates(records, processes=3) == {}
    plan = gpu_cost.gpu_plan({rid: spec}, 1, {}, seed_workers=3)
    assert "--processes 3 --record" in plan and "3 seeds at once" in plan


@pytest.mark.parametrize("candidate", [{"grouped_on_cuda": True}, {"run": {"backend": "vectorized"}},
                                       {"float_settings": {"cudnn_allow_tf32": False}}],
                         ids=["grouped-on-cuda", "silo-backend", "tf32-off"])
def test_a_record_of_a_candidate_path_never_stands_for_the_runs_own(tmp_path, candidate):
    """A newer record measured with one of the benchmark's candidates switched on prices nothing: the runs train on
    their own path, at their own float settings."""
    records = tmp_path / "gpu_throughput.jsonl"
    own = _rate("tdcd_cifar10", 60.0, 2.0) | {"run": {"backend": "auto"}, "grouped_on_cuda": False}
    records.write_text(json.dumps(own) + "\n" + json.dumps(_rate("tdcd_cifar10", 90.0, 2.0) | candidate) + "\n")
    assert gpu_cost.load_rates(records)["tdcd_cifar10"]["client_steps_per_s"] == 60.0
    records.write_text(json.dumps(own) + "\n" + json.dumps(_rate("tdcd_cifar10", 90.0, 2.0)) + "\n")
    assert gpu_cost.load_rates(records)["tdcd_cifar10"]["client_steps_per_s"] == 90.0  # the newer, when the runs'
