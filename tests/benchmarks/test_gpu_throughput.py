"""The GPU benchmark (benchmarks/gpu_throughput.py) runs end to end on the CPU at its tiny size, so it cannot rot
between the sessions that have a GPU; what it measures is checked for sense, not speed."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _benchmark():
    spec = importlib.util.spec_from_file_location("gpu_throughput", ROOT / "benchmarks" / "gpu_throughput.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_workload_runs_on_the_cpu_at_tiny_size(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the run table is read from config/
    bench = _benchmark()
    results = bench.main(["--tiny", "--device", "cpu", "--out", str(tmp_path), "--workloads", *bench.WORKLOADS])
    assert [r["workload"] for r in results] == list(bench.WORKLOADS)
    # each result in a file of its own, as soon as measured: OUT/records/WORKLOAD.json (no --step)
    files = sorted((tmp_path / "records").iterdir())
    assert [f.name for f in files] == sorted(f"{name}.json" for name in bench.WORKLOADS)
    written = {f.stem: json.loads(f.read_text()) for f in files}
    assert all(written[r["workload"]] == {**r, "step": None, "recorded": False} for r in results)
    for r in results:
        assert r["client_steps"] > 0 and r["seconds"] > 0 and r["eval_seconds"] > 0
        assert math.isclose(r["client_steps_per_s"], r["client_steps"] / r["seconds"])
        assert r["flops_per_client_step"] > 0
        assert math.isclose(r["tflops"], r["client_steps_per_s"] * r["flops_per_client_step"] / 1e12)
        assert r["float_settings"]["cudnn_allow_tf32"] in (True, False)
    by_name = {r["workload"]: r for r in results}
    # the counted client-steps are the runs' own: FedCluster's M cycles of frac x n / M clients x E steps,
    # FedAvg's frac x n clients x E steps (one timed round each), TDCD's N silos x K clients per iteration
    tiny = bench.WORKLOADS["fedcluster_100"].tiny
    assert by_name["fedcluster_100"]["client_steps"] == round(0.1 * tiny["n_devices"]) * tiny["E"] * 1
    for name in ("tdcd_modelnet", "tdcd_cifar10_q1", "tdcd_cifar10_k100", "tdcd_modelnet_k20", "tdcd_mimic"):
        tdcd = by_name[name]
        assert tdcd["client_steps"] == tdcd["advances"] * tdcd["run"]["N"] * tdcd["run"]["K"], name
    assert by_name["tdcd_mimic"]["run"]["model"] == "lstm" and by_name["tdcd_cifar10_k100"]["run"]["K"] == 3
    # FedCluster's rounds after an evaluation, serial and overlapped, are timed; the other engines' are not
    assert {name for name, r in by_name.items() if "evaluated_rounds" in r} == {"fedcluster_10", "fedcluster_100"}
    assert all(t > 0 for t in by_name["fedcluster_10"]["evaluated_rounds"].values())


def test_each_workload_names_one_paper_scale_run():
    """The workloads select runs of the paper scale's run table: a renamed setting would make them select none."""
    bench = _benchmark()
    from fedrepro.validate import load_and_validate

    _, table = load_and_validate({"scale": "paper"}, ROOT / "config")
    runs = list(table.runs.values())
    for name, workload in bench.WORKLOADS.items():
        spec = bench.find_run(runs, workload)
        assert spec["paper"] == workload.paper, name
        assert set(workload.tiny) <= set(spec), f"{name}: --tiny changes settings the run does not have"


@pytest.mark.slow
def test_several_processes_at_once_sum_their_client_steps(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    bench = _benchmark()
    args = ["--tiny", "--device", "cpu", "--workloads", "defedavg_fmnist"]
    (alone,) = bench.main(args)
    (together,) = bench.main([*args, "--processes", "2"])
    assert together["processes"] == 2
    assert together["client_steps"] == 2 * alone["client_steps"]  # the same run twice, its trace the same
    assert math.isclose(together["client_steps_per_s"], together["client_steps"] / together["seconds"])


@pytest.mark.slow
def test_tdcd_can_be_measured_with_its_batchnorm_clients_vectorized(monkeypatch):
    monkeypatch.chdir(ROOT)
    bench = _benchmark()
    args = ["--tiny", "--device", "cpu", "--workloads", "tdcd_cifar10"]
    (loop,) = bench.main(args)
    (vectorized,) = bench.main([*args, "--silo-backend", "vectorized"])
    assert (loop["run"]["backend"], vectorized["run"]["backend"]) == ("auto", "vectorized")
    assert vectorized["client_steps"] == loop["client_steps"] > 0


@pytest.mark.slow
def test_recorded_flops_skip_tdcds_counted_round(tmp_path, monkeypatch):
    """A workload whose FLOPs a record at the same size gives is timed after one untimed iteration, not after a
    counted round of Q (~25 s on a GPU), with the record's FLOPs; a record of another size gives none."""
    monkeypatch.chdir(ROOT)
    bench = _benchmark()
    args = ["--tiny", "--device", "cpu", "--workloads", "tdcd_cifar10", "--flops-from", str(tmp_path / "none.jsonl")]
    (counted,) = bench.main(args)
    assert counted["flops_from"] == "counted"
    other = {**counted, "run": {**counted["run"], "K": 7}, "flops_per_client_step": 1.0}
    mine = {**counted, "run": {**counted["run"], "backend": "vectorized"}, "flops_per_client_step": 123.0e9}
    records = tmp_path / "records.jsonl"
    older = {**counted, "flops_per_client_step": 5.0}
    records.write_text("".join(json.dumps(r) + "\n" for r in (older, other, mine, other)))
    calls = []
    monkeypatch.setattr(bench, "FlopCounterMode", lambda **kw: calls.append(kw) or contextlib.nullcontext())
    (known,) = bench.main([*args[:-1], str(records)])
    assert not calls and known["flops_from"] == "records"
    assert known["flops_per_client_step"] == 123.0e9  # the newest record of the run (its silo backend aside)
    assert known["advances"] == 1 and known["client_steps"] == known["run"]["N"] * known["run"]["K"]
    assert math.isclose(known["tflops"], known["client_steps_per_s"] * 123.0e9 / 1e12)


def test_a_record_file_is_written_whole_and_never_over_another(tmp_path):
    bench = _benchmark()
    first = bench.write_record(tmp_path, "baseline", {"workload": "tdcd_cifar10", "x": 1})
    second = bench.write_record(tmp_path, "baseline", {"workload": "tdcd_cifar10", "x": 2})
    alone = bench.write_record(tmp_path, None, {"workload": "tdcd_cifar10", "x": 3})
    assert [p.name for p in (first, second, alone)] == ["baseline-tdcd_cifar10.json", "baseline-tdcd_cifar10.2.json",
                                                        "tdcd_cifar10.json"]
    assert [json.loads(p.read_text())["x"] for p in (first, second, alone)] == [1, 2, 3]
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == sorted(p.name for p in (first, second, alone))
