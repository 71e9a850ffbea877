"""Running one spec: results files, provenance, determinism, divergence, resume after a kill."""

import hashlib
import json
import logging
import re
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from fedrepro.engines.context import CHECKPOINT_MAGIC, RunContext
from fedrepro.errors import DataError, ResultsError
from fedrepro.experiments import execute
from fedrepro.experiments.execute import execute_run
from fedrepro.experiments.store import RunFiles, run_files
from fedrepro.layout import Layout
from fedrepro.numerics import KEYING
from fedrepro.results.audit import FAIL, OK, WARN, Checkout, RunAudit, audit_run, rerun
from fedrepro.utils import atomic

REPO = Path(__file__).resolve().parents[2]


def _run(tmp: Path, name: str, spec: dict, run_id: str, inputs: dict) -> RunFiles:
    files = RunFiles(tmp / name / run_id)
    execute_run(run_id, spec, files, inputs["prepared"], inputs["data_provenance"], device="cpu",
                log_path=tmp / f"{name}.log", repo=REPO)
    return files


def test_results_are_byte_identical_and_provenance_is_complete(tmp_path, synthetic_inputs, spec_and_id):
    spec, rid = spec_and_id()
    first = _run(tmp_path, "a", spec, rid, synthetic_inputs)
    second = _run(tmp_path, "b", spec, rid, synthetic_inputs)
    assert first.metrics.read_bytes() == second.metrics.read_bytes()

    metrics = pd.read_csv(first.metrics)
    assert list(metrics["round"].unique()) == list(range(0, 41, 5))
    assert metrics.groupby("seed")["grad_norm"].last().lt(metrics.groupby("seed")["grad_norm"].first()).all()
    record = json.loads(first.record.read_text())
    assert record["run_id"] == rid and record["spec"] == spec and record["diverged"] is False
    assert record["metrics_sha256"] == hashlib.sha256(first.metrics.read_bytes()).hexdigest()
    assert record["data_files"][0]["source"] == "mirror" and len(record["data_files"][0]["sha256"]) == 64
    for key in ("commit", "dirty"):
        assert key in record["git"]
    assert record["packages"]["torch"].startswith("2.") and record["device"]["device"] == "cpu"
    assert record["seeds"] == [0, 1] and record["wall_seconds"] >= 0 and record["ended"] >= record["started"]
    assert record["resumed"] == [] and not first.checkpoint.exists()


def test_a_seed_does_not_depend_on_how_many_seeds_the_run_has(tmp_path, synthetic_inputs, spec_and_id):
    two, rid2 = spec_and_id(seeds=2)
    one, rid1 = spec_and_id(seeds=1, eval_every=10)
    m2 = pd.read_csv(_run(tmp_path, "two", two, rid2, synthetic_inputs).metrics)
    m1 = pd.read_csv(_run(tmp_path, "one", one, rid1, synthetic_inputs).metrics)
    seed0 = m2[(m2["seed"] == 0) & (m2["round"] % 10 == 0)].reset_index(drop=True)
    pd.testing.assert_frame_equal(seed0, m1)
    assert not m2[m2["seed"] == 1]["grad_norm"].equals(m2[m2["seed"] == 0]["grad_norm"])


def test_runs_that_differ_only_in_their_step_sizes_draw_the_same_random_coins(tmp_path, synthetic_inputs, spec_and_id):
    """A tuning's trials are paired: every setting but the step sizes keys the finite-sum engine's streams."""
    coins = {}
    for name, change in (("base", {}), ("steps", {"c_l": 1.0, "eta_tilde": 0.3}), ("K", {"K": 2})):
        spec, rid = spec_and_id(**change)
        record = json.loads(_run(tmp_path, name, spec, rid, synthetic_inputs).record.read_text())
        coins[name] = [info["full_round_indices"] for info in record["summary"]["seeds"].values()]
    assert coins["base"] == coins["steps"] and any(coins["base"])  # FedPAGE's full rounds: the same coins
    keying = KEYING["finite_sum"]  # what claims and tunings read of it
    assert not any(keying.keys(k) for k in ("c_l", "eta_tilde", "step_split")) and keying.keys("K")
    assert coins["base"] != coins["K"]  # another setting: other streams


def test_a_diverging_run_is_recorded_not_raised(tmp_path, synthetic_inputs, spec_and_id):
    spec, rid = spec_and_id(divergence_threshold=0.05)  # ||grad f|| starts above it
    files = _run(tmp_path, "div", spec, rid, synthetic_inputs)
    record = json.loads(files.record.read_text())
    assert record["diverged"] is True
    assert all(info["diverged_at"] == 0 for info in record["summary"]["seeds"].values())
    assert pd.read_csv(files.metrics)["round"].max() == 0


KILLER = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    from fedrepro.engines import context
    from fedrepro.experiments.execute import execute_run
    from fedrepro.experiments.store import RunFiles

    args = json.loads(sys.argv[1])
    saves = {"n": 0}
    original = context.RunContext.save_checkpoint

    def save_then_die(self, state):
        original(self, state)
        saves["n"] += 1
        if saves["n"] == args["die_after"]:
            os._exit(9)  # no cleanup, like a SIGKILL

    context.RunContext.save_checkpoint = save_then_die
    execute_run(args["run_id"], args["spec"], RunFiles(Path(args["dir"])),
                Path(args["prepared"]), [Path(p) for p in args["provenance"]],
                device="cpu")
''')


def test_a_killed_run_resumes_and_ends_with_the_same_metrics(tmp_path, synthetic_inputs, spec_and_id):
    spec, rid = spec_and_id()
    reference = _run(tmp_path, "reference", spec, rid, synthetic_inputs)

    files = RunFiles(tmp_path / "killed" / rid)
    args = {"run_id": rid, "spec": spec, "dir": str(files.run_dir), "die_after": 5,  # mid seed 1
            "prepared": str(synthetic_inputs["prepared"]),
            "provenance": [str(p) for p in synthetic_inputs["data_provenance"]]}
    killed = subprocess.run([sys.executable, "-c", KILLER, json.dumps(args)], capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    assert files.checkpoint.exists() and not files.metrics.exists() and not files.record.exists()

    execute_run(rid, spec, files, synthetic_inputs["prepared"], synthetic_inputs["data_provenance"],
                device="cpu", log_path=tmp_path / "resumed.log")
    assert "resuming from checkpoint: seed 1, round 20" in (tmp_path / "resumed.log").read_text()
    assert files.metrics.read_bytes() == reference.metrics.read_bytes()
    assert not files.checkpoint.exists()


def _forge_one_float(path: Path, value: float) -> None:
    """Change one float64 of a checkpoint in place, as a pickled Python float (opcode BINFLOAT, big-endian):
    one metrics value of the rows it holds, the rest of the file byte for byte as saved."""
    data = path.read_bytes()
    old = b"G" + struct.pack(">d", value)
    assert data.count(old) == 1, "the value is not in the checkpoint exactly once"
    path.write_bytes(data.replace(old, b"G" + struct.pack(">d", value * 2)))


def test_a_forged_checkpoint_is_refused_and_the_run_retrains_to_the_same_metrics(tmp_path, synthetic_inputs,
                                                                                  spec_and_id, kill_at_checkpoint):
    spec, rid = spec_and_id()
    reference = _run(tmp_path, "reference", spec, rid, synthetic_inputs)
    restore = kill_at_checkpoint(5)  # mid seed 1: the checkpoint holds seed 0's rows
    files = RunFiles(tmp_path / "forged" / rid)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "forged", spec, rid, synthetic_inputs)
    restore()
    value = float(pd.read_csv(reference.metrics).query("seed == 0 and round == 10")["grad_norm"].iloc[0])
    _forge_one_float(files.checkpoint, value)

    _run(tmp_path, "forged", spec, rid, synthetic_inputs)
    assert files.metrics.read_bytes() == reference.metrics.read_bytes()  # the forged value reached no row
    log = (tmp_path / "forged.log").read_text()
    assert "resuming from checkpoint" not in log
    assert f"ignoring checkpoint {files.checkpoint}: its content hashes to sha256" in log
    assert "starting from round 0" in log


def _reseal(path: Path) -> str:
    """Give a checkpoint's header the sha256 of its payload as it now is, as whoever edited the payload can; returns
    that sha256."""
    head, _, payload = path.read_bytes()[len(CHECKPOINT_MAGIC):].partition(b"\n")
    header = {**json.loads(head), "payload_sha256": hashlib.sha256(payload).hexdigest()}
    path.write_bytes(CHECKPOINT_MAGIC + json.dumps(header).encode() + b"\n" + payload)
    return header["payload_sha256"]


def test_a_resealed_checkpoint_is_resumed_recorded_and_caught_by_the_audits_rerun(tmp_path, synthetic_inputs,
                                                                                 spec_and_id, kill_at_checkpoint):
    """A checkpoint's payload hash shows only that it was not damaged: one edited and resealed is resumed. The run
    records the resume, the audit names it, and its rerun, which trains from round 0, differs."""
    spec, rid = spec_and_id()
    reference = _run(tmp_path, "reference", spec, rid, synthetic_inputs)
    root = tmp_path / "repo"  # as the audit finds a run: its inputs where the run table names them
    prepared, provenance = root / "data" / "prepared" / "a9a.npz", root / "data" / "raw" / "a9a" / "PROVENANCE.json"
    for made, there in ((synthetic_inputs["prepared"], prepared), (synthetic_inputs["data_provenance"][0], provenance)):
        there.parent.mkdir(parents=True)
        shutil.copy(made, there)
    inputs = (prepared, [provenance])
    files = run_files(Layout("smoke", root).results, rid)
    restore = kill_at_checkpoint(5)  # mid seed 1: the checkpoint holds seed 0's rows
    with pytest.raises(KeyboardInterrupt):
        execute_run(rid, spec, files, *inputs, device="cpu", repo=root)
    restore()
    _forge_one_float(files.checkpoint, float(pd.read_csv(reference.metrics).query("seed == 0 and round == 10")
                                             ["grad_norm"].iloc[0]))
    forged = _reseal(files.checkpoint)

    record = execute_run(rid, spec, files, *inputs, device="cpu", repo=root)
    assert record["resumed"] == [{"checkpoint": "checkpoint.pt", "payload_sha256": forged, "group": 1, "round": 20}]
    assert files.metrics.read_bytes() != reference.metrics.read_bytes()  # the forged value reached a row
    run, checkout = RunAudit(rid, []), Checkout.of(root)
    audit_run(run, files, checkout)
    assert run.status_of("metrics.csv") == OK  # nothing on disk contradicts a record
    resume = next(f for f in run.findings if f.detail.startswith("resumed from"))
    assert resume.status == WARN and resume.check == "resumed"  # named in the summary, not as run.json
    assert f"checkpoint.pt at seed group 1, round 20 (payload sha256 {forged})" in resume.detail
    found = rerun(run, spec, checkout, Layout("smoke", root))
    assert found.status == FAIL and found.detail.startswith("rerun differs"), found


def test_a_checkpoint_of_other_code_is_refused_and_the_run_starts_over(tmp_path, synthetic_inputs, spec_and_id,
                                                                      kill_at_checkpoint, monkeypatch):
    """The run id keys the settings, not the code: a checkpoint saved before a change to an engine's numerics
    (its version, or the sources of its engine and update rules) is not resumed by the changed code."""
    from fedrepro import numerics

    spec, rid = spec_and_id()
    restore = kill_at_checkpoint(5)
    files = RunFiles(tmp_path / "changed" / rid)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "changed", spec, rid, synthetic_inputs)
    restore()
    monkeypatch.setitem(numerics.VERSIONS, "finite_sum", numerics.VERSIONS["finite_sum"] + 1)
    _run(tmp_path, "changed", spec, rid, synthetic_inputs)
    log = (tmp_path / "changed.log").read_text()
    assert "resuming from checkpoint" not in log and "numerics" in log and "starting from round 0" in log


def test_an_unreadable_checkpoint_is_named_in_one_line(tmp_path):
    path = tmp_path / "run" / "checkpoint.pt"
    ctx = RunContext("r1", {}, "cpu", path, logging.getLogger("test"))
    path.mkdir(parents=True)  # a folder where the file should be: reading it is an OSError
    with pytest.raises(ResultsError, match=rf"^{re.escape(str(path))}: the checkpoint cannot be read .*\n?$") as info:
        ctx.load_checkpoint()
    assert "\n" not in str(info.value)


def test_a_record_is_strict_json_and_one_holding_nan_is_refused_naming_the_key(tmp_path, synthetic_inputs,
                                                                                 spec_and_id):
    spec, rid = spec_and_id(divergence_threshold=0.05)  # a diverged run: its record is strict JSON still
    files = _run(tmp_path, "div", spec, rid, synthetic_inputs)

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    assert json.loads(files.record.read_text(), parse_constant=refuse)["diverged"] is True
    target = tmp_path / "nan" / "run.json"
    with pytest.raises(ValueError, match=rf"^{re.escape(str(target))}: summary.seeds.0.loss is nan, which JSON "
                                         r"cannot hold"):
        atomic.write_json(target, {"run_id": rid, "summary": {"seeds": {"0": {"loss": float("nan")}}}})
    assert not target.parent.exists() or list(target.parent.iterdir()) == []  # nothing half-written


@pytest.mark.parametrize("link", ["run", "runs"])
def test_a_run_directory_that_leads_outside_its_results_tree_is_refused(tmp_path, synthetic_inputs, spec_and_id,
                                                                         link):
    """A symbolic link at the run's folder or at runs/ would make training write outside the results tree."""
    spec, rid = spec_and_id()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    results = tmp_path / "results"
    (results / "runs").mkdir(parents=True) if link == "run" else results.mkdir()
    (results / "runs" / rid if link == "run" else results / "runs").symlink_to(elsewhere, target_is_directory=True)
    files = RunFiles(results / "runs" / rid)
    with pytest.raises(ResultsError, match=rf"^{re.escape(str(files.run_dir))} resolves to .*elsewhere.*, outside "
                                           rf"the results tree {re.escape(str(results))}/"):
        execute_run(rid, spec, files, synthetic_inputs["prepared"], synthetic_inputs["data_provenance"],
                    device="cpu", log_path=tmp_path / "run.log", repo=REPO)
    assert list(elsewhere.rglob("*")) == []  # refused before anything was written


def test_a_missing_provenance_record_stops_the_run_before_it_trains(tmp_path, synthetic_inputs, spec_and_id,
                                                                     monkeypatch):
    def trains(*args, **kwargs):
        raise AssertionError("the run trained before its data's provenance was read")

    monkeypatch.setattr(execute, "run_seeds", trains)
    spec, rid = spec_and_id()
    missing = {**synthetic_inputs, "data_provenance": [tmp_path / "absent" / "PROVENANCE.json"]}
    with pytest.raises(DataError, match="PROVENANCE.json: the data's provenance record cannot be read"):
        _run(tmp_path, "noprov", spec, rid, missing)
    assert not (tmp_path / "noprov" / rid / "metrics.csv").exists()


def test_a_run_given_another_input_than_the_one_its_settings_name_stops(tmp_path, synthetic_inputs, spec_and_id):
    spec, rid = spec_and_id()  # dataset a9a: it reads a9a.npz
    other = tmp_path / "w8a.npz"
    other.write_bytes(synthetic_inputs["prepared"].read_bytes())
    with pytest.raises(DataError, match=r"reads a9a.npz \(its dataset and view\), not .*w8a.npz"):
        _run(tmp_path, "other", spec, rid, {**synthetic_inputs, "prepared": other})
    assert not (tmp_path / "other" / rid / "metrics.csv").exists()


def test_seed_workers_give_the_same_bytes_as_one_seed_after_another(synthetic_inputs, spec_and_id,
                                                                    same_with_seed_workers):
    spec, _ = spec_and_id(seeds=3)
    _, workers = same_with_seed_workers(spec, synthetic_inputs, workers=2)
    assert workers["seed_workers"] == 2 and workers["seeds"] == [0, 1, 2]


def test_a_job_of_seed_workers_resumes_its_finished_and_its_checkpointed_groups(tmp_path, synthetic_inputs,
                                                                                 spec_and_id, kill_at_checkpoint):
    """The state a killed job of two workers leaves: seed 0's group trained (its checkpoint says done), seed 1's
    checkpointed mid-run. The job run again trains only the rest of seed 1, to the same bytes."""
    from fedrepro.data.inputs import load_input
    from fedrepro.engines import ENGINES
    from fedrepro.engines.driver import run_one_group

    spec, rid = spec_and_id()
    reference = _run(tmp_path, "reference", spec, rid, synthetic_inputs)
    files = RunFiles(tmp_path / "killed" / rid)
    engine = ENGINES[spec["engine"]]
    for g, dies in ((0, None), (1, 2)):
        ctx = RunContext(rid, spec, "cpu", files.group_checkpoint(g), logging.getLogger("killed"), show_progress=False)
        setup = engine.setup(spec, load_input(synthetic_inputs["prepared"]), ctx)
        if dies is None:
            run_one_group(engine, setup, spec, ctx, g)
            continue
        restore = kill_at_checkpoint(dies)
        with pytest.raises(KeyboardInterrupt):
            run_one_group(engine, setup, spec, ctx, g)
        restore()
    assert files.group_checkpoint(0).exists() and files.group_checkpoint(1).exists()

    record = execute_run(rid, spec, files, synthetic_inputs["prepared"], synthetic_inputs["data_provenance"],
                         device="cpu", seed_workers=2, log_path=tmp_path / "resumed.log")
    log = (tmp_path / "resumed.log").read_text()
    assert "resuming from checkpoint: seed 1, round 20" in log
    assert [(r["checkpoint"], r["group"], r["round"]) for r in record["resumed"]] == [
        ("checkpoint.group0.pt", 0, None), ("checkpoint.group1.pt", 1, 20)]  # each worker's, group 0's done
    assert "seed 0 round" not in log  # its group was done: not trained again
    assert files.metrics.read_bytes() == reference.metrics.read_bytes()
    assert [p for p in files.checkpoints() if p.exists()] == []


def test_a_checkpoint_of_the_other_way_of_training_is_named_and_not_resumed(tmp_path, synthetic_inputs, spec_and_id,
                                                                           kill_at_checkpoint):
    spec, rid = spec_and_id()
    reference = _run(tmp_path, "reference", spec, rid, synthetic_inputs)
    files = RunFiles(tmp_path / "killed" / rid)
    restore = kill_at_checkpoint(2)
    with pytest.raises(KeyboardInterrupt):
        execute_run(rid, spec, files, synthetic_inputs["prepared"], synthetic_inputs["data_provenance"], device="cpu")
    restore()
    execute_run(rid, spec, files, synthetic_inputs["prepared"], synthetic_inputs["data_provenance"], device="cpu",
                seed_workers=2, log_path=tmp_path / "workers.log")
    log = (tmp_path / "workers.log").read_text()
    assert f"not resuming {files.checkpoint}: it is a checkpoint of one seed group after another" in log
    assert files.metrics.read_bytes() == reference.metrics.read_bytes() and not files.checkpoint.exists()


WORKERS_JOB = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    from fedrepro.experiments.execute import execute_run
    from fedrepro.experiments.store import RunFiles

    if __name__ == "__main__":
        args = json.loads(sys.argv[1])
        execute_run(args["run_id"], args["spec"], RunFiles(Path(args["dir"])), Path(args["prepared"]),
                    [Path(p) for p in args["provenance"]], device="cpu", seed_workers=2)
''')


@pytest.mark.slow
def test_seed_workers_of_a_killed_job_stop_and_the_job_resumes_to_the_same_metrics(tmp_path, synthetic_inputs,
                                                                                   spec_and_id):
    """SIGKILL of the job's process alone (not its group): its workers notice and stop, and the job run again
    ends with the bytes of one seed after another."""
    import os
    import signal
    import time

    spec, rid = spec_and_id(rounds=12000, eval_every=1000, checkpoint_every=50)  # ~8 s a seed here
    files = RunFiles(tmp_path / "killed" / rid)
    args = {"run_id": rid, "spec": spec, "dir": str(files.run_dir), "prepared": str(synthetic_inputs["prepared"]),
            "provenance": [str(p) for p in synthetic_inputs["data_provenance"]]}
    script = tmp_path / "job.py"
    script.write_text(WORKERS_JOB)
    job = subprocess.Popen([sys.executable, str(script), json.dumps(args)], start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not all(files.group_checkpoint(g).exists() for g in (0, 1)):
        assert job.poll() is None and time.monotonic() < deadline, "the job ended before both groups checkpointed"
        time.sleep(0.05)
    job.kill()
    job.wait()
    gone = time.monotonic() + 3  # the workers look for their parent every 0.5 s; each seed trains ~8 s more
    while True:  # the job's session holds its workers until they exit
        try:
            os.killpg(job.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < gone, "a seed worker went on training after its job was killed"
        time.sleep(0.05)
    left = {g: files.group_checkpoint(g).read_bytes() for g in (0, 1)}
    time.sleep(0.5)
    assert {g: files.group_checkpoint(g).read_bytes() for g in (0, 1)} == left and not files.metrics.exists()

    execute_run(rid, spec, files, synthetic_inputs["prepared"], synthetic_inputs["data_provenance"], device="cpu",
                seed_workers=2, log_path=tmp_path / "resumed.log")
    assert "resuming from checkpoint" in (tmp_path / "resumed.log").read_text()
    reference = _run(tmp_path, "reference", spec, rid, synthetic_inputs)
    assert files.metrics.read_bytes() == reference.metrics.read_bytes()
