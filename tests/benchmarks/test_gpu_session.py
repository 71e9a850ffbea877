"""benchmarks/gpu_session.sh fits a lent device's window (issue 61): its steps' caps add up to at most 400 s (first
command) and 90 s (`more`); each step writes its records to files of its own as it measures them; a step cut by its
cap keeps the records of the steps before it, and the session goes on. Checked on the CPU: with a stand-in for
Python (seconds), and at the benchmark's tiny size (the real thing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "benchmarks" / "gpu_session.sh"
FIRST = ["card", "baseline", "grouped", "defedavg_processes2", "tdcd_tf32_off", "tdcd_processes3", "tdcd_vectorized"]
MORE = ["more_cuda_tests", "more_profile"]
# a stand-in for Python: prints its arguments; sleeps 30 s in the step FAKE_SLOW_STEP names
FAKE_PYTHON = """#!/bin/sh
echo "python $*"
prev=
for a in "$@"; do [ "$prev" = --step ] && [ "$a" = "$FAKE_SLOW_STEP" ] && exec sleep 30; prev=$a; done
exit 0
"""


def _session(out: Path, *more: str, **env: str) -> list[tuple[str, float, int]]:
    """Runs the session into `out`; its steps.tsv: (step, cap, exit status) in order."""
    subprocess.run(["bash", str(SESSION), str(out), *more], cwd=ROOT, env={**os.environ, **env}, check=True,
                   capture_output=True, timeout=600)
    rows = [line.split("\t") for line in (out / "steps.tsv").read_text().splitlines()]
    return [(name, float(cap), int(rc)) for name, cap, rc, _ in rows]


def _fake(tmp_path: Path) -> str:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return str(fake)


def test_the_steps_and_their_caps_fit_the_window(tmp_path):
    python = _fake(tmp_path)
    first = _session(tmp_path / "first", PYTHON=python)
    assert [name for name, _, _ in first] == FIRST
    assert sum(cap for _, cap, _ in first) <= 400
    more = _session(tmp_path / "more", "more", PYTHON=python)
    assert [name for name, _, _ in more] == MORE
    assert sum(cap for _, cap, _ in more) <= 90
    # every benchmark step writes under its own name: --out OUT --step STEP; the recorded ones are those asked for
    for name in FIRST[1:]:
        log = (tmp_path / "first" / "logs" / f"{name}.log").read_text()
        assert f"--out {tmp_path / 'first'} --step {name}" in log, name
        assert ("--record" in log) == (name in ("baseline", "defedavg_processes2", "tdcd_processes3")), name
    assert "-m pytest" in (tmp_path / "more" / "logs" / "more_cuda_tests.log").read_text()


def test_a_step_cut_by_its_cap_lets_the_session_go_on(tmp_path):
    rows = _session(tmp_path, PYTHON=_fake(tmp_path), FAKE_SLOW_STEP="grouped", GPU_SESSION_CAP_grouped="0.5")
    assert [name for name, _, _ in rows] == FIRST
    assert {name: rc for name, _, rc in rows if name != "card"} == {
        name: 124 if name == "grouped" else 0 for name in FIRST[1:]}


@pytest.mark.slow
def test_a_tiny_session_leaves_each_steps_records(tmp_path):
    """The first command at the tiny size on the CPU, one step (TDCD in three processes) cut by a cap too short to
    start it: each other step's records are in files of their own, those of the steps before the cut one too."""
    rows = _session(tmp_path, PYTHON=sys.executable, GPU_SESSION_TINY="1", GPU_SESSION_CAP_tdcd_processes3="0.3")
    status = {name: rc for name, _, rc in rows}
    assert status.pop("tdcd_processes3") in (124, 137)
    status.pop("card")  # (no nvidia-smi here)
    assert set(status.values()) == {0}
    expected = {"baseline": ["fedcluster_10", "defedavg_cifar10", "tdcd_cifar10"],
                "grouped": ["fedcluster_10", "defedavg_cifar10"], "defedavg_processes2": ["defedavg_cifar10"],
                "tdcd_tf32_off": ["tdcd_cifar10"], "tdcd_vectorized": ["tdcd_cifar10"]}
    names = sorted(p.name for p in (tmp_path / "records").iterdir())
    assert names == sorted(f"{step}-{w}.json" for step, ws in expected.items() for w in ws)
    for step, workloads in expected.items():
        for w in workloads:
            record = json.loads((tmp_path / "records" / f"{step}-{w}.json").read_text())
            assert (record["step"], record["workload"], record["recorded"]) == (step, w, False)
            assert record["client_steps"] > 0 and record["card"] == "cpu"
    record = lambda name: json.loads((tmp_path / "records" / f"{name}.json").read_text())  # noqa: E731
    assert record("defedavg_processes2-defedavg_cifar10")["processes"] == 2
    assert record("tdcd_tf32_off-tdcd_cifar10")["float_settings"]["cudnn_allow_tf32"] is False
    assert record("tdcd_vectorized-tdcd_cifar10")["run"]["backend"] == "vectorized"
