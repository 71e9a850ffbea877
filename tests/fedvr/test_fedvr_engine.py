"""The monte_carlo engine and the fedvr configuration: the tidy table, its streams, its schema."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fedrepro.engines.context import RunContext
from fedrepro.experiments.execute import execute_run
from fedrepro.errors import ConfigError
from fedrepro.experiments.runtable import run_id_of
from fedrepro.schemas import check
from fedrepro.validate import load_and_validate
from fedrepro.objectives.least_squares import make_insurance_problem
from fedrepro.experiments.store import RunFiles

REPO = Path(__file__).resolve().parents[2]
DATA = {"n_agents": 3, "samples_per_agent": 20, "features": ["age", "sex", "bmi", "children", "smoker"],
        "target": "charges", "scaling": "minmax", "scaling_rows": "used", "rows": "first", "rows_seed": 0,
        "intercept": False}


def spec_of(**overrides) -> dict:
    spec = {"paper": "fedvr", "engine": "monte_carlo", "method": "fedavg_svrg", "algorithm": "fedavg_svrg",
            "dataset": "insurance", **DATA, "activation": {"kind": "linspace", "low": 0.3, "high": 0.9},
            "theta0": 0.5, "S": 2, "M": 3, "delta": 0.1, "rounds": 6, "seeds": 3}
    spec.update(overrides)
    return spec


BASELINE = {"algorithm": "fedavg_prob", "method": "fedavg_prob", "K": 100, "eta_schedule": "inv_sqrt_K",
            "local_steps": None, "batch_size": 1, "sampling": "with_replacement"}


@pytest.fixture
def inputs(write_run_inputs, insurance_like):
    return write_run_inputs("insurance", "insurance", **insurance_like)


def run(tmp_path: Path, name: str, spec: dict, inputs: dict) -> tuple[pd.DataFrame, dict, RunFiles]:
    rid = run_id_of(spec)
    files = RunFiles(tmp_path / name / rid)
    record = execute_run(rid, spec, files, inputs["prepared"], inputs["data_provenance"], device="cpu",
                         log_path=tmp_path / f"{name}.log", repo=REPO)
    return pd.read_csv(files.metrics), record, files


def test_engine_writes_the_tidy_monte_carlo_table(tmp_path, inputs, insurance_like):
    spec = spec_of()
    metrics, record, files = run(tmp_path, "a", spec, inputs)
    d = 5
    assert list(metrics.columns) == (["seed", "round", "cost", "cost_error"] + [f"theta_{i}" for i in range(d)]
                                     + [f"theta_star_{i}" for i in range(d)])
    assert len(metrics) == 3 * 7 and sorted(metrics["seed"].unique()) == [0, 1, 2]
    assert (metrics.groupby("seed")["round"].apply(list) == [list(range(7))] * 3).all()

    problem = make_insurance_problem(insurance_like, **DATA)
    assert np.allclose(metrics["cost"] - metrics["cost_error"], problem.f_star, rtol=0, atol=1e-15)
    assert np.allclose(metrics.filter(like="theta_star_").to_numpy(), problem.theta_star.numpy(), rtol=0, atol=0)
    theta = torch.as_tensor(metrics[[f"theta_{i}" for i in range(d)]].to_numpy())
    assert np.allclose(problem.cost(theta).numpy(), metrics["cost"], rtol=1e-12)  # cost is f of the logged iterate
    assert (metrics.loc[metrics["round"] == 0, [f"theta_{i}" for i in range(d)]] == 0.5).all().all()
    last = metrics[metrics["round"] == 6]
    assert last["cost_error"].max() < metrics.loc[metrics["round"] == 0, "cost_error"].min()  # it learns
    assert last["theta_0"].nunique() == 3  # the Monte Carlo runs differ

    assert record["seeds"] == [0, 1, 2] and record["diverged"] is False
    assert record["summary"]["f_star"] == pytest.approx(problem.f_star)
    assert set(record["summary"]["seeds"]) == {"0", "1", "2"}
    again, _, files2 = run(tmp_path, "b", spec, inputs)
    assert files.metrics.read_bytes() == files2.metrics.read_bytes()


def test_a_monte_carlo_run_does_not_depend_on_how_many_runs_or_rounds(tmp_path, inputs):
    three, _, _ = run(tmp_path, "three", spec_of(seeds=3, rounds=6), inputs)
    two, _, _ = run(tmp_path, "two", spec_of(seeds=2, rounds=4), inputs)
    prefix = three[(three["seed"] < 2) & (three["round"] <= 4)].reset_index(drop=True)
    pd.testing.assert_frame_equal(prefix, two)


def test_methods_of_one_environment_share_activation_draws(tmp_path):
    def activation(spec: dict, mc: int, k: int) -> torch.Tensor:
        ctx = RunContext("x", spec, "cpu", tmp_path / "c.pt", None)
        return torch.rand(18, generator=ctx.streams(mc)("activation", k))

    ours, theirs = spec_of(), spec_of(**BASELINE, S=5)
    assert torch.equal(activation(ours, 2, 7), activation(theirs, 2, 7))  # paired runs
    assert not torch.equal(activation(ours, 2, 7), activation(ours, 3, 7))  # runs differ
    other_p = spec_of(activation={"kind": "linspace", "low": 0.5, "high": 0.95})
    assert not torch.equal(activation(ours, 2, 7), activation(other_p, 2, 7))  # another environment


def test_run_schema_catches_misspelt_and_missing_keys():
    check(spec_of(), "monte_carlo_run.schema.yaml", "test")
    uniform = {**BASELINE, "algorithm": "fedavg_uniform"}
    check(spec_of(**uniform, agents_per_round=5), "monte_carlo_run.schema.yaml", "test")
    with pytest.raises(ConfigError, match="'detla' was unexpected"):
        check(spec_of(detla=0.1), "monte_carlo_run.schema.yaml", "test")
    with pytest.raises(ConfigError, match="'delta' is a required property"):
        check({k: v for k, v in spec_of().items() if k != "delta"}, "monte_carlo_run.schema.yaml", "test")
    with pytest.raises(ConfigError, match="'agents_per_round' is a required property"):
        check(spec_of(**uniform), "monte_carlo_run.schema.yaml", "test")


def test_fedvr_config_resolves_every_figure_at_every_scale():
    for scale, rounds, seeds in (("paper", 100, 20), ("quick", 100, 20), ("smoke", 10, 4)):
        _, table = load_and_validate({"scale": scale}, REPO / "config")
        figures = {f.name: f for f in table.paper_figures("fedvr")}
        assert sorted(figures) == [f"fig{i}" for i in range(3, 10)]
        assert figures["fig3"].run_ids == figures["fig4"].run_ids == figures["fig5"].run_ids  # computed once
        assert set(figures["fig3"].run_ids) < set(figures["fig9"].run_ids)  # Fig 9 reuses case 1
        runs = [table.runs[rid] for f in figures.values() for rid in f.run_ids]
        assert {(r["rounds"], r["seeds"], r["dataset"]) for r in runs} == {(rounds, seeds, "insurance")}
        assert {(r["algorithm"], r["S"], r["M"]) for r in runs} == {
            ("fedavg_svrg", 5, 2), ("fedavg_prob", 5, 2), ("fedavg_svrg", 10, 5), ("fedavg_prob", 10, 5),
            ("fedavg_uniform", 5, 2)}


class Killed(Exception):
    pass


def test_a_killed_monte_carlo_run_resumes_and_ends_with_the_same_metrics(tmp_path, inputs, monkeypatch):
    spec = spec_of(rounds=9, seeds=4, checkpoint_every=4)
    _, _, reference = run(tmp_path, "reference", spec, inputs)
    save = RunContext.save_checkpoint

    def save_then_die(self, state):
        save(self, state)
        if state["round"] == 8:
            raise Killed

    monkeypatch.setattr(RunContext, "save_checkpoint", save_then_die)
    with pytest.raises(Killed):
        run(tmp_path, "killed", spec, inputs)
    monkeypatch.undo()
    _, _, files = run(tmp_path, "killed", spec, inputs)
    assert "resuming from checkpoint: seed 0,1,2,3, round 8" in (tmp_path / "killed.log").read_text()
    assert files.metrics.read_bytes() == reference.metrics.read_bytes()
    assert not files.checkpoint.exists()


def test_a_monte_carlo_run_is_one_seed_group_whatever_its_seed_workers(inputs, same_with_seed_workers):
    _, record = same_with_seed_workers(spec_of(), inputs)
    assert record["seed_workers"] == 1  # its seeds are one batched computation: nothing to train at once
