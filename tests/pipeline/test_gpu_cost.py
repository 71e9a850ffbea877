"""`fedrepro cost --gpus N`: each network run's work counted from its spec (and DeFedAvg's traces), priced at the
GPU rates benchmarks/gpu_throughput.py records, and packed onto N GPUs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fedrepro.cli import main
from fedrepro.errors import ResultsError
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
    assert "## GPU plan: 4 H200 GPUs" in out and "| fedcluster | 60 | 60 |" in out
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


def _records(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("name, card", [("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100"), ("h100", "h100"),
                                        ("NVIDIA A100-SXM4-40GB", "a100"), ("cpu", "cpu")])
def test_a_cards_name_is_matched_by_its_model(name, card):
    assert gpu_cost.card_name(name) == card


def test_rates_are_one_cards_and_a_card_without_records_is_refused(tmp_path):
    """`--gpu` picks the card; without it the one card on record; two cards on record need the choice, and a card
    with no record is refused rather than priced from another's."""
    h100 = _rate("fedcluster_10", 2000.0, 0.3) | {"card": "NVIDIA H100 80GB HBM3"}
    records = _records(tmp_path / "r.jsonl", _rate("fedcluster_10", 3000.0, 0.2), h100)
    assert gpu_cost.load_rates(records, card="h100")["fedcluster_10"]["client_steps_per_s"] == 2000.0
    assert gpu_cost.load_rates(records, card="NVIDIA H200")["fedcluster_10"]["client_steps_per_s"] == 3000.0
    with pytest.raises(ResultsError, match="rates on record for h100, h200: choose one card"):
        gpu_cost.load_rates(records)
    only_h200 = _records(tmp_path / "h200.jsonl", _rate("fedcluster_10", 3000.0, 0.2))
    assert gpu_cost.load_rates(only_h200)["fedcluster_10"]["client_steps_per_s"] == 3000.0
    with pytest.raises(ResultsError, match=r"no GPU rates recorded on h100 \(on record: h200\)"):
        gpu_cost.load_rates(only_h200, card="h100")
    with pytest.raises(ResultsError, match="rates of h100 and h200 in one table"):
        gpu_cost.gpu_plan({}, 1, {"a": _rate("a", 1.0, 1.0), "b": h100})


def test_the_cli_prices_one_card_and_refuses_one_without_records(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu_cost, "RECORDS", _records(tmp_path / "r.jsonl", _rate("fedcluster_10", 3000.0, 0.2)))
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as stop:
        main(["cost", "--scale", "paper", "--gpus", "1", "--gpu", "h100"])
    err = capsys.readouterr().err
    assert stop.value.code == 1 and len(err.strip().splitlines()) == 1 and "no GPU rates recorded on h100" in err
    main(["cost", "--scale", "paper", "--gpus", "1", "--gpu", "h200"])
    out = capsys.readouterr().out
    assert out.startswith("## GPU plan: 1 H200 GPU") and "| H200-hours |" in out


def test_a_sessions_kept_records_are_merged_once(tmp_path):
    """benchmarks/gpu_throughput.py --merge OUT/records: the records of the steps run with --record, without their
    session fields; merging again adds nothing."""
    folder = tmp_path / "records"
    folder.mkdir()
    kept = _rate("tdcd_cifar10", 50.0, 2.0) | {"card": "NVIDIA H100 80GB HBM3", "step": "baseline", "recorded": True}
    (folder / "baseline-tdcd_cifar10.json").write_text(json.dumps(kept) + "\n")
    (folder / "grouped-tdcd_cifar10.json").write_text(json.dumps(kept | {"step": "grouped", "recorded": False}))
    records = _records(tmp_path / "r.jsonl", _rate("fedcluster_10", 3000.0, 0.2))
    assert gpu_cost.merge_records(folder, records) == ["tdcd_cifar10 (NVIDIA H100 80GB HBM3)"]
    assert gpu_cost.merge_records(folder, records) == []
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert len(lines) == 2 and "step" not in lines[1] and "recorded" not in lines[1]
    assert gpu_cost.load_rates(records, card="h100")["tdcd_cifar10"]["client_steps_per_s"] == 50.0


def _tdcd(model: str, **settings) -> tuple[str, dict]:
    return next((r, s) for r, s in _runs("paper").items() if s["paper"] == "tdcd" and s["model"] == model
                and all(s[k] == v for k, v in settings.items()))


def _tdcd_rates(eval_s: float = 0.0) -> dict:
    run = lambda **s: {"backend": "auto", "Q": 10, **s}  # noqa: E731  (the records' runs: the smaller K, Q = 10)
    return {"tdcd_cifar10": _rate("tdcd_cifar10", 60.0, eval_s) | {"run": run(N=2, K=50, B=2000)},
            "tdcd_modelnet": _rate("tdcd_modelnet", 90.0, eval_s) | {"run": run(N=12, K=10, B=320)}}


def test_modelnets_k_clients_split_the_same_samples_so_k_does_not_change_its_price():
    """ModelNet's iteration is compute-bound: each silo steps on the round's B samples whatever K, so K = 20 costs
    what K = 10 does; CIFAR-10's, launch-bound, follows its client-steps: K = 100 twice K = 50."""
    rates = _tdcd_rates(eval_s=1.0)
    cost = lambda model, **s: gpu_cost.run_cost(*_tdcd(model, Q=10, **s), rates)  # noqa: E731
    k10, k20 = cost("resnet18_imagenet", K=10), cost("resnet18_imagenet", K=20)
    assert k20.client_steps == 2 * k10.client_steps and math.isclose(k20.seconds, k10.seconds)
    _, spec = _tdcd("resnet18_imagenet", Q=10, K=10)
    assert math.isclose(k10.seconds, spec["seeds"] * (spec["iterations"] * 12 * 10 / 90.0 + k10.evaluations
                                                       / spec["seeds"] * 1.0))
    k50, k100 = cost("resnet18_cifar", K=50), cost("resnet18_cifar", K=100)
    assert math.isclose(k100.seconds - k100.evaluations, 2 * (k50.seconds - k50.evaluations))


def test_q1_pays_the_rounds_exchange_every_iteration():
    """The exchange (each silo's forward of the round's batch, a third of an iteration's work) comes once a round:
    Q = 1 pays it every iteration, the Q = 10 record every tenth; Q = 30 a little less than the record."""
    rates = _tdcd_rates()
    seconds = {q: gpu_cost.run_cost(*_tdcd("resnet18_cifar", K=50, Q=q), rates).seconds for q in (1, 10, 30)}
    assert math.isclose(seconds[1] / seconds[10], (1 + 1 / 3) / (1 + 1 / 30))
    assert math.isclose(seconds[30] / seconds[10], (1 + 1 / 90) / (1 + 1 / 30))


def test_no_cluster_job_asks_for_more_than_48_hours():
    """A run longer than a usual cluster's 48-hour limit is several jobs, one after another, each resuming from the
    last one's checkpoint: so each job asks for 48 h at most, its jobs together for the whole run, and such a run
    checkpoints (TDCD's at the paper scale: 1,000 iterations)."""
    from fedrepro.engines import ENGINES
    from fedrepro.engines.contract import MAX_JOB_MINUTES

    assert MAX_JOB_MINUTES == 48 * 60
    several = 0
    for scale in ("paper", "quick"):
        for spec in _runs(scale).values():
            engine = ENGINES[spec["engine"]]
            assert engine.job_minutes(spec) <= MAX_JOB_MINUTES
            assert engine.jobs(spec) * engine.job_minutes(spec) >= engine.runtime_minutes(spec)
            if engine.jobs(spec) > 1:
                several += 1
                assert spec.get("checkpoint_every"), spec["paper"]
    assert several  # (TDCD's CIFAR-10 K = 100 asks for ~340 h in all)
    plan = gpu_cost.gpu_plan({r: s for r, s in _runs("paper").items() if s["paper"] == "tdcd"}, 1, _tdcd_rates())
    assert "a run past 48 h goes on from its checkpoint in its next job" in plan
    assert gpu_cost.cluster_jobs(48 * 3600) == 1 and gpu_cost.cluster_jobs(48 * 3600 + 1) == 2


def test_a_training_job_asks_for_the_memory_its_records_show(tmp_path):
    """1.5 x its own benchmark record's max_rss, else its paper's largest at the scale, rounded up to 100 MB; the
    stated default without a record."""
    from fedrepro.results.cost import DEFAULT_TRAIN_MB, train_memory_mb, train_peaks

    folder = tmp_path / "logs" / "paper" / "benchmarks" / "train"
    folder.mkdir(parents=True)
    head = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for run_id, rss in (("a", 400.0), ("b", 1210.0)):
        (folder / f"{run_id}.tsv").write_text(head + f"19.4\t0:00:19\t{rss}\t1001\t380\t414\t0\t0\t73\t14\n")
    peaks = train_peaks("paper", tmp_path)
    assert peaks == {"a": 400.0, "b": 1210.0}
    assert train_memory_mb("a", ["a", "b"], peaks) == 600  # its own: 1.5 x 400
    assert train_memory_mb("c", ["a", "b", "c"], peaks) == 1900  # its paper's largest: 1.5 x 1210 = 1815
    assert train_memory_mb("c", ["c"], peaks) == DEFAULT_TRAIN_MB == 3000
