"""Seconds per seed of representative FedPAGE paper-scale runs (finite_sum engine), for side-by-side
timing of two source trees; with --out it also writes each run's metrics.csv (for `cmp`).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_finite_sum.py --rounds 1000
    PYTHONPATH=/path/to/other/src .venv/bin/python benchmarks/bench_finite_sum.py --rounds 1000
    ... --cases classes --rounds 300 --seeds 2 --out /tmp/new   # all 44 run classes, metrics for cmp

Run from a directory with the project's config/ and data/prepared/{a9a,w8a}.npz. Times are the
setup (problem, one evaluation), then per seed without it, scaled to 1000 rounds, in CPU seconds of
this process (less noisy than wall time on a shared machine; 1 torch thread, as in the pipeline).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import torch

from fedrepro.data import load_prepared
from fedrepro.engines import ENGINES
from fedrepro.engines.context import RunContext
from fedrepro.engines.driver import run_seeds
from fedrepro.experiments.store import write_metrics
from fedrepro.validate import load_and_validate

# (name, figure, panel, curve label, eta_tilde or None for the curve's own)
CASES = [
    ("a9a-N10-scaffold-b652", "fig4", "N=10, M=3250", "SCAFFOLD", 0.1),
    ("a9a-N10-fedavg-b652", "fig4", "N=10, M=3250", "FedAvg", 0.1),
    ("w8a-N10-fedpage-K10", "fig1b", "N=10, M=4800, S=1", "FedPAGE-10", None),
    ("w8a-N10-fedpage-K20", "fig1b", "N=10, M=4800, S=1", "FedPAGE-20", None),
    ("a9a-N10-fedpage-K1", "fig1a", "N=10, M=3250, S=1", "FedPAGE-1", None),
    ("a9a-N325-scaffold-b22", "fig4", "N=325, M=100", "SCAFFOLD", 0.1),
    ("a9a-N325-fedpage", "fig4", "N=325, M=100", "FedPAGE", 0.1),
    ("a9a-robust-fedpage", "fig2a", None, "FedPAGE", 0.1),
    ("a9a-robust-scaffold-b4", "fig2a", None, "SCAFFOLD", 0.1),
    ("a9a-robust-fedavg-b4", "fig2a", None, "FedAvg", 0.1),
    ("w8a-logistic-fedpage", "fig3b", None, "FedPAGE", 0.1),
    ("a9a-robust-fedpage-full", "fig5", "a9a, robust regression", "FedPAGE-Full", 0.1),
    ("a9a-robust-scaffold-full", "fig5", "a9a, robust regression", "SCAFFOLD-Full", 0.1),
    ("w8a-logistic-fedavg-full", "fig6", "w8a, logistic + nonconvex reg.", "FedAvg-Full", 0.1),
]
EXTRA = [  # more paths for the byte-identity check (--cases all)
    ("w8a-N480-fedpage-K20", "fig1b", "N=480, M=100, S=1", "FedPAGE-20", None),
    ("a9a-N325-fedavg-b22", "fig4", "N=325, M=100", "FedAvg", 0.1),
    ("a9a-logistic-fedpage", "fig3a", None, "FedPAGE", 0.03),
    ("a9a-logistic-scaffold-b4", "fig3a", None, "SCAFFOLD", 0.1),
    ("w8a-logistic-fedavg-b4", "fig3b", None, "FedAvg", 0.1),
    ("w8a-logistic-scaffold-b4", "fig3b", None, "SCAFFOLD", 0.1),
    ("w8a-robust-fedpage-K1", "fig1b", "N=4800, M=10, S=10", "FedPAGE-1", None),
    ("w8a-robust-fedpage-full", "fig5", "w8a, robust regression", "FedPAGE-Full", 0.1),
    ("w8a-robust-fedavg-full", "fig5", "w8a, robust regression", "FedAvg-Full", 0.1),
    ("a9a-logistic-fedpage-full", "fig6", "a9a, logistic + nonconvex reg.", "FedPAGE-Full", 0.1),
    ("a9a-logistic-scaffold-full", "fig6", "a9a, logistic + nonconvex reg.", "SCAFFOLD-Full", 0.1),
    ("w8a-logistic-scaffold-full", "fig6", "w8a, logistic + nonconvex reg.", "SCAFFOLD-Full", 0.3),
    ("a9a-robust-fedavg-full-0.01", "fig5", "a9a, robust regression", "FedAvg-Full", 0.01),
    ("a9a-N10-scaffold-b652-0.01", "fig4", "N=10, M=3250", "SCAFFOLD", 0.01),
]


def run_classes(table) -> list[tuple[str, dict, int]]:
    """One run (the first) of each configuration class of the paper-scale table, with the class size:
    runs that differ only in step sizes cost the same per round (unless they diverge)."""
    classes: dict[str, list] = {}
    for run_id, spec in sorted(table.runs.items()):
        if spec.get("paper") != "fedpage":
            continue
        batch = spec["b"] if spec["algorithm"] != "fedpage" else spec["b3"]
        name = (f"{spec['dataset']}-{spec['objective'][:6]}-N{spec['n_clients']}-{spec['algorithm']}"
                f"-b{batch}-K{spec['K']}-S{spec['S']}")
        classes.setdefault(name, [dict(spec), 0])[1] += 1
    return [(name, spec, n) for name, (spec, n) in sorted(classes.items())]


def find_spec(table, figure: str, panel: str | None, label: str, eta: float | None) -> dict:
    for c in table.figure("fedpage", figure).curves:
        if (panel in (None, c.panel)) and c.label == label and (eta is None or c.grid.get("eta_tilde") == eta):
            return dict(table.runs[c.run_id])
    raise KeyError((figure, panel, label, eta))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--cases", nargs="*", default=None,
                   help="case names, 'all' (every case here), 'classes' (one run of each of the table's 44 "
                        "configuration classes) (default: the timing set)")
    p.add_argument("--out", type=Path, help="write <out>/<case>.csv (the run's metrics.csv)")
    args = p.parse_args()
    torch.set_num_threads(1)
    _, table = load_and_validate({"scale": "paper"}, Path("config"))
    weights: dict[str, tuple[int, int]] = {}  # classes: name -> (runs in the class, seeds x rounds per run)
    if not args.cases:
        cases = [(name, find_spec(table, *where)) for name, *where in CASES]
    elif args.cases == ["classes"]:
        classes = run_classes(table)
        cases = [(name, spec) for name, spec, _ in classes]
        weights = {name: (n, spec["seeds"] * spec["rounds"]) for name, spec, n in classes}
    else:
        cases = [(name, find_spec(table, *where)) for name, *where in CASES + EXTRA
                 if args.cases == ["all"] or name in args.cases]
    data = {name: load_prepared(Path("data/prepared") / f"{name}.npz") for name in ("a9a", "w8a")}
    log = logging.getLogger("bench_finite_sum")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    print(f"{'run':40s} {'setup s':>8s} {'s/seed/1000 rounds':>19s}" + (f" {'paper CPU s':>11s}" if weights else ""))
    total = weighted = 0.0
    for name, spec in cases:
        times = []
        for rounds, seeds in ((0, 1), (args.rounds, args.seeds)):  # setup + one evaluation, then the run
            spec.update(rounds=rounds, seeds=seeds)
            with tempfile.TemporaryDirectory() as tmp:
                ctx = RunContext(name, spec, "cpu", Path(tmp) / "ckpt.pt", log, show_progress=False)
                t0 = time.process_time()
                engine = ENGINES["finite_sum"]
                setup = engine.setup(spec, data[spec["dataset"]], ctx)
                rows, _ = run_seeds(engine, setup, spec, ctx)
                times.append(time.process_time() - t0)
        setup_time, dt = times
        total += dt
        per_1000 = (dt - setup_time) / args.seeds * 1000 / args.rounds
        line = f"{name:40s} {setup_time:8.3f} {per_1000:19.3f}"
        if name in weights:  # the class's runs at paper scale: n runs x (setup + seeds x rounds)
            n, seed_rounds = weights[name]
            paper = n * (setup_time + per_1000 * seed_rounds / 1000)
            weighted += paper
            line += f" {paper:11.1f}"
        print(line, flush=True)
        if args.out:
            write_metrics(args.out / f"{name}.csv", rows, setup.columns)
    print(f"{'total':40s} {total:8.3f} CPU s" + (f"; paper scale, weighted by class size: {weighted:.0f} CPU s"
                                                 if weights else ""))


if __name__ == "__main__":
    main()
