"""The jobs after training (tables, figures, pages, claims, audit) read CSV and JSON files: they must not load torch,
whose import costs seconds in every one of them, nor the download stack (pooch, requests: ~0.3 s). Their scripts' imports, and the run table whose objects Snakemake
hands them as params, are imported in a fresh interpreter."""

import ast
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
JOBS = ("aggregate", "plot", "table", "claims", "claims_table", "figure_page", "audit")


def _imports(script: Path) -> set[str]:
    tree = ast.parse(script.read_text())
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module} | {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}


def test_the_jobs_after_training_load_neither_torch_nor_the_download_stack():
    modules = sorted(set().union(*(_imports(SCRIPTS / f"{job}.py") for job in JOBS))
                     | {"fedrepro.experiments.runtable"})
    assert "fedrepro.plots" in modules and "fedrepro.claims.ledger" in modules  # the scripts were read
    code = ("import importlib, sys\n"
            f"for name in {modules!r}:\n    importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pooch', 'requests'))[:3])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_the_report_pages_that_the_workflow_reads_when_parsed_load_no_matplotlib():
    """The workflow builds the report's front page object when it is parsed, in every invocation and every
    cluster job: its module must not pull in the figure builders (matplotlib and seaborn, ~1.6 s)."""
    code = ("import sys, fedrepro.report_pages\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'seaborn', 'torch'))[:3])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
