"""What a job's start-up costs, per job kind: a fresh interpreter that runs what Snakemake's script preamble
imports and the module-level imports of the rule's script (its lazy imports are the job's work, not its start-up),
and unpickles nothing. Median wall and CPU seconds of repeats, and whether torch was loaded. With --scale, each
kind's start-up is also multiplied by its jobs in that scale's benchmark records (`fedrepro cost`) and set beside
their recorded CPU.

    .venv/bin/python benchmarks/bench_startup.py
    .venv/bin/python benchmarks/bench_startup.py --scale quick --repeats 5
"""

from __future__ import annotations

import argparse
import ast
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what the preamble of a Snakemake `script:` job imports before the script runs (snakemake/script/__init__.py);
# the params it unpickles are run specs and figure records (fedrepro.experiments.runtable)
PREAMBLE = "import pickle\nfrom snakemake.logging import logger\nfrom snakemake.iocontainers import Snakemake\n" \
           "import fedrepro.experiments.runtable\n"
REPORT = "import sys\nprint(int(any(m == 'torch' for m in sys.modules)), len(sys.modules))"


def rule_scripts() -> dict[str, str]:
    """Rule -> its script's name, read from workflow/rules/*.smk."""
    out = {}
    for smk in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for rule, script in re.findall(r"^rule (\w+):.*?script:\s*\"[./]*scripts/(\w+)\.py\"", smk.read_text(),
                                       re.S | re.M):
            out[rule] = script
    return out


def module_imports(script: str) -> str:
    """The script's module-level import statements, as source."""
    source = (ROOT / "scripts" / f"{script}.py").read_text()
    return "\n".join(ast.get_source_segment(source, node) for node in ast.parse(source).body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def start_up(code: str, repeats: int) -> tuple[float, float, bool, int]:
    """Median wall and CPU seconds of a fresh interpreter running `code`, whether torch was loaded, and how many
    modules."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code + "\n" + REPORT], capture_output=True, text=True,
                              check=True, cwd=ROOT / "scripts")
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    torch, modules = done.stdout.split()
    return statistics.median(walls), statistics.median(cpus), torch == "1", int(modules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", help="multiply by the jobs of this scale's benchmark records")
    args = parser.parse_args()
    rules = rule_scripts()
    costs = None
    if args.scale:
        from fedrepro.results.cost import job_costs

        costs = job_costs(args.scale, ROOT).groupby("rule").agg(jobs=("job", "size"), cpu_s=("cpu_s", "sum"))
    base_wall, base_cpu, _, base_modules = start_up("pass", args.repeats)
    print(f"bare interpreter: {base_wall:.2f} s wall, {base_cpu:.2f} CPU-s, {base_modules} modules; "
          f"median of {args.repeats}")
    header = "| rule | script | wall_s | cpu_s | torch | modules |"
    if costs is not None:
        header += f" jobs at {args.scale} | start-up CPU-s | recorded CPU-s | share |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for script in sorted(set(rules.values())):
        wall, cpu, torch, modules = start_up(PREAMBLE + module_imports(script), args.repeats)
        row = (f"| {', '.join(r for r, s in rules.items() if s == script)} | {script}.py | {wall:.2f} | {cpu:.2f} | "
               f"{'yes' if torch else 'no'} | {modules} |")
        if costs is not None:
            jobs = int(sum(costs.loc[r, "jobs"] for r, s in rules.items() if s == script and r in costs.index))
            recorded = float(sum(costs.loc[r, "cpu_s"] for r, s in rules.items() if s == script and r in costs.index))
            share = f"{jobs * cpu / recorded:.0%}" if recorded else "-"
            row += f" {jobs} | {jobs * cpu:.0f} | {recorded:.0f} | {share} |"
        print(row)


if __name__ == "__main__":
    main()
