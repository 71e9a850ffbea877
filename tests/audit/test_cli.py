"""The `fedrepro` command: its help, where `fedrepro run` writes, and errors as one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fedrepro.cli import listing, main

REPO = Path(__file__).resolve().parents[2]


def fedrepro(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command in a fresh process, as a user runs it (stderr as the user sees it, logging included)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-c", "from fedrepro.cli import main; main()", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_help_describes_the_commands(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert "reproduces the figures and claims" in out and "Entry points" not in out
    for command in ("fetch", "run", "audit"):
        assert f"  {command} " in out


def test_run_writes_outside_the_pipeline_results(smoke_copy, capsys):
    before = sorted((smoke_copy / "results").rglob("*"))
    main(["run", "fedvr", "fig3", "--scale", "smoke", "--set", "rounds=2", "--device", "cpu"])
    assert sorted((smoke_copy / "results").rglob("*")) == before
    (made,) = (smoke_copy / "adhoc" / "runs").iterdir()
    assert (made / "metrics.csv").is_file() and f"-> adhoc/runs/{made.name}," in capsys.readouterr().out
    # ignored by git (and so never committed) and by DVC (never recorded with the results)
    ignored = subprocess.run(["git", "check-ignore", "-q", str(made / "metrics.csv")], cwd=smoke_copy)
    assert ignored.returncode == 0
    assert "/adhoc/" in (smoke_copy / ".dvcignore").read_text().splitlines()


def test_an_error_is_printed_once(smoke_copy):
    done = fedrepro("run", "fedvr", "fig99", "--scale", "smoke", cwd=smoke_copy)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.splitlines()[0]]
    assert done.stderr.startswith("fedrepro: error: unknown figure 'fig99'; did you mean 'fig9'?")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_a_one_line_error():
    done = fedrepro("run", "fedvr", "fig3", "--scale", "smoke", "--device", "cuda", cwd=REPO)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == ("fedrepro: error: device: 'cuda' was requested but torch finds no CUDA device on "
                                   "this machine; use device auto or cpu")


@pytest.mark.parametrize("out", ["results", "results/", "results/runs", "./results/adhoc"])
def test_run_refuses_to_write_into_the_pipeline_results(out, tmp_path):
    done = fedrepro("run", "fedvr", "fig3", "--scale", "smoke", "--out", out, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"fedrepro: error: --out {Path(out)}: that is inside the pipeline's results/")
    assert not (tmp_path / "results").exists()  # refused before anything is written


@pytest.mark.parametrize("setting, expected", [
    ("delta=.nan", "delta: nan is not a finite number"),
    ("delta=.inf", "delta: inf is not a finite number"),
    ("theta0=.nan", "theta0: nan is not a finite number"),
    ("theta0=[0.0, 0.0, 0.0, 0.0, -.inf]", "theta0.4: -inf is not a finite number"),
    ("seeds=1000000000000", "seeds = 1000000000000 exceeds the most seeds of a run (1000)"),
    ("theta0=[0.5, 0.5]", "fedrepro run --set: theta0 lists 2 value(s), but a run of these settings needs 5: one per "
                          "column of the design (age, sex, bmi, children, smoker)"),
])
def test_run_refuses_a_setting_that_is_no_number_or_beyond_memory_naming_the_key(smoke_copy, setting, expected):
    done = fedrepro("run", "fedvr", "fig3", "--scale", "smoke", "--set", setting, "--device", "cpu", cwd=smoke_copy)
    assert done.returncode == 1 and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert expected in done.stderr
    assert not (smoke_copy / "adhoc" / "runs").exists()  # refused before anything ran


def test_audit_refuses_a_negative_rerun_count(capsys):
    with pytest.raises(SystemExit) as done:
        main(["audit", "fedvr", "--rerun", "-1"])
    assert done.value.code == 2 and "argument --rerun: -1 is not a count of runs (0 or more)" in capsys.readouterr().err


def test_list_names_the_papers_and_a_papers_figures_claims_and_readings():
    done = fedrepro("list", cwd=REPO)
    assert done.returncode == 0 and [line.split()[0] for line in done.stdout.splitlines()] == [
        "fedpage", "fedvr", "fedcluster", "defedavg", "tdcd"]
    done = fedrepro("list", "defedavg", cwd=REPO)
    assert done.returncode == 0
    assert "  table1 " in done.stdout and "  C1b " in done.stdout and "favano" in done.stdout
    assert "(assumption) FAVANO's server period" in done.stdout


def test_list_says_which_figures_a_curve_reaches_through_a_yaml_anchor(tmp_path):
    """FedPAGE's fig2a is an anchor that fig2b, 3a and 3b merge: a curve added to it is drawn (and run) in all four,
    which the loaded mapping no longer shows; `fedrepro list` says so, per figure and per method."""
    text = (REPO / "config" / "papers" / "fedpage.yaml").read_text()
    text = text.replace("  fedavg_full:   {algorithm: fedavg,", "  fedavg_b8: {algorithm: fedavg, S: 20, b: 8}\n"
                        "  fedavg_full:   {algorithm: fedavg,")
    text = text.replace("curves: [{method: fedpage}, {method: scaffold}, {method: fedavg}]\n    grid: {eta_tilde: "
                        "[0.1, 0.03, 0.01]}\n  fig2b:", "curves: [{method: fedpage}, {method: scaffold}, {method: fedavg}, "
                        "{method: fedavg_b8}]\n    grid: {eta_tilde: [0.1, 0.03, 0.01]}\n  fig2b:")
    for kind in ("papers", "claims"):
        (tmp_path / kind).mkdir()
        (tmp_path / kind / "fedpage.yaml").write_text(
            text if kind == "papers" else (REPO / "config" / kind / "fedpage.yaml").read_text())
    lines = listing("fedpage", tmp_path).splitlines()
    assert "  fedavg_b8      fedavg: fig2a, fig2b, fig3a, fig3b" in lines
    after = {line.split()[0]: lines[i + 1:i + 3] for i, line in enumerate(lines) if line.startswith("  fig")}
    assert after["fig2a"][0].endswith("^ its curves are also drawn in fig2b, fig3a, fig3b (YAML anchor)")
    assert after["fig3b"][0].endswith("^ merges fig2a (a YAML <<): caption, caption_settings, curves, grid")
    assert not after["fig1a"][0].strip().startswith("^")
    assert "reuses the panels and curves of fig2, fig3, fig4, fig5" in listing("defedavg", REPO / "config")


@pytest.mark.parametrize("args, expected", [
    (("run", "fedpag", "fig2a"), "unknown paper 'fedpag'; did you mean 'fedpage'? papers: fedpage, fedvr"),
    (("run", "fedpage", "fig22"), "unknown figure 'fig22'; did you mean 'fig2b'? figures: fig1a, fig1b"),
    (("list", "tdcx"), "unknown paper 'tdcx'; did you mean 'tdcd'?"),
    (("audit", "fedpge"), "unknown paper 'fedpge'; did you mean 'fedpage'?"),
])
def test_a_misspelt_name_is_answered_at_once_with_the_closest_one(args, expected):
    done = fedrepro(*args, cwd=REPO)
    assert done.returncode == 1 and done.stderr.startswith(f"fedrepro: error: {expected}")
