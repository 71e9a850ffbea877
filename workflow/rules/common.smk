# Helpers shared by the rules: everything is looked up in the run table RUNS (Snakefile).
from fedrepro.data import REGISTRY


wildcard_constraints:
    paper="|".join(PAPERS),
    dataset="|".join(REGISTRY),
    run_id="[0-9a-f]{16}",
    figure="[A-Za-z0-9_]+",


def figure_of(wildcards):
    return RUNS.figure(wildcards.paper, wildcards.figure)


def run_outputs(run_ids):
    return [f"results/runs/{rid}/{name}" for rid in run_ids for name in ("metrics.csv", "run.json")]


def paper_targets(paper):
    figures = RUNS.paper_figures(paper)
    return [f"figures/{paper}/{f.name}.{ext}" for f in figures for ext in ("pdf", "png")] + [
        f"results/claims/{paper}.csv"
    ]
