# Helpers shared by the rules: everything is looked up in the run table RUNS (Snakefile).
from fedrepro.data import REGISTRY
from fedrepro.data.views import VIEWS


wildcard_constraints:
    paper="|".join(PAPERS),
    dataset="|".join(REGISTRY),
    run_id="[0-9a-f]{16}",
    figure="[A-Za-z0-9_]+",
    view="|".join(VIEWS),


def figure_of(wildcards):
    return RUNS.figure(wildcards.paper, wildcards.figure)


def run_outputs(run_ids):
    return [f"results/runs/{rid}/{name}" for rid in run_ids for name in ("metrics.csv", "run.json")]


def paper_targets(paper):
    # a drawing is figures/<paper>/<name>.{pdf,png}, a table figure .{csv,md,tex} (Figure.formats)
    figures = RUNS.paper_figures(paper)
    return [f"figures/{paper}/{f.name}.{ext}" for f in figures for ext in f.formats] + [
        f"results/claims/{paper}.csv"
    ]


def train_inputs(wildcards):
    return RUNS.input_files(wildcards.run_id)


# generous CPU milliseconds per round and seed, by engine, for cluster schedulers' runtime limits
# (federated_nn: the paper scale's AlexNet on a GPU, ~3 s a round; the quick MLP takes ~0.1 s)
MS_PER_ROUND = {"finite_sum": 30, "monte_carlo": 100, "federated_nn": 5000}


# engines that train a network: at paper scale their jobs ask a cluster for one GPU
NETWORK_ENGINES = ("federated_nn",)


def train_gpus(wildcards):
    return int(RUNS.scale == "paper" and RUNS.runs[wildcards.run_id]["engine"] in NETWORK_ENGINES)


def train_runtime(wildcards):
    spec = RUNS.runs[wildcards.run_id]
    return 10 + int(spec["seeds"] * spec["rounds"] * MS_PER_ROUND[spec["engine"]] / 60_000)  # minutes
