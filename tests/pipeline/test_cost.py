"""`fedrepro cost`: Snakemake's benchmark records summed per paper and rule, train jobs by their run's paper."""

import json
from pathlib import Path

from fedrepro.layout import Layout
from fedrepro.results.cost import cost_summary, job_costs

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _benchmark(path: Path, wall: float, cpu: float, rss: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{wall}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")


def test_costs_are_summed_per_paper_and_rule_with_runs_by_their_paper(tmp_path):
    out = Layout("smoke", tmp_path)
    for run_id, paper, wall in (("a" * 16, "fedvr", 10.0), ("b" * 16, "fedvr", 30.0), ("c" * 16, "tdcd", 20.0)):
        (out.runs / run_id).mkdir(parents=True)
        (out.runs / run_id / "run.json").write_text(json.dumps({"spec": {"paper": paper}}))
        _benchmark(out.logs / "benchmarks" / "train" / f"{run_id}.tsv", wall, wall * 0.9, 300.0)
    _benchmark(out.logs / "benchmarks" / "plot" / "fedvr" / "fig3.tsv", 2.0, 1.5, 120.0)
    _benchmark(tmp_path / "logs" / "benchmarks" / "download" / "insurance.tsv", 1.0, 0.2, 50.0)
    _benchmark(Layout("quick", tmp_path).logs / "benchmarks" / "plot" / "fedvr" / "fig3.tsv", 99.0, 99.0, 9.0)

    origins = {"a" * 16: "primary", "b" * 16: "steps=grid"}
    costs = job_costs("smoke", tmp_path, origins)
    assert len(costs) == 5  # not the quick scale's
    fedvr_train = costs[(costs["paper"] == "fedvr") & (costs["rule"] == "train")]
    assert fedvr_train["wall_s"].sum() == 40.0 and fedvr_train["cpu_s"].sum() == 36.0
    assert set(costs["paper"]) == {"fedvr", "tdcd", "(data)"}
    text = cost_summary(costs, "smoke")
    assert "| fedvr | train | 2 | 40.0 | 36.0 | 300.0 |" in text and "| fedvr | plot | 1 | 2.0 | 1.5 | 120.0 |" in text
    readings = text.split("per reading")[1].split("slowest")[0]
    assert "| fedvr | primary | 1 | 10.0 | 9.0 |" in readings and "| fedvr | steps=grid | 1 | 30.0 | 27.0 |" in readings
    assert "| tdcd | ? | 1 | 20.0 | 18.0 |" in readings and "plot" not in readings  # no reading says it has the run
    slowest = text.split("slowest runs")[1]
    assert slowest.index("b" * 16) < slowest.index("c" * 16) < slowest.index("a" * 16)
