# Helpers shared by the rules: everything is looked up in the run table RUNS (Snakefile).
from fedrepro.data import REGISTRY
from fedrepro.data.mimic3_ihm import raw_files as mimic3_raw_files
from fedrepro.data.sources import STAND_INS, USER_DATASETS
from fedrepro.data.views import VIEWS
from fedrepro.engines import ENGINES
from fedrepro.experiments.runtable import Figure, FigureList
from fedrepro.utils.digest import config_digest


wildcard_constraints:
    paper="|".join(PAPERS),
    dataset="|".join([*REGISTRY, "cifar10_splitpair"]),  # download and prepare narrow it to REGISTRY
    user_dataset="|".join(USER_DATASETS),
    standin="|".join(STAND_INS),
    mode="rgb|gray",
    side=r"\d+",
    run_id="[0-9a-f]{16}",
    figure=r"(?!claims\b)[A-Za-z0-9_]+",  # figures/<paper>/claims.* is the claims rule's figure
    view="|".join(VIEWS),
    reading="[A-Za-z0-9_]+",
    alternative="[A-Za-z0-9_]+",


def user_raw_files(wildcards):
    """The user's files rule register_user_data hashes (MIMIC-III's; ModelNet40's PNGs are listed by the
    rule itself), so that replacing one registers and prepares the data again."""
    if wildcards.user_dataset == "mimic3_ihm":
        return [str(p) for p in mimic3_raw_files(f"data/raw/{wildcards.user_dataset}")]
    return []


def figure_of(wildcards):
    return RUNS.figure(wildcards.paper, wildcards.figure)


def alternative_figure(wildcards):
    return RUNS.alternative(wildcards.paper, wildcards.reading, wildcards.alternative).figures[wildcards.figure]


def settings_of(part):
    """A param of a figure's job: the digest of the part of its figure that the job reads (e.g.
    Figure.table_settings). Snakemake reruns a job whose params changed (a default rerun trigger), so a
    new title redraws the figure and a new curve label rebuilds its table, without retraining."""
    return lambda wildcards: config_digest(part(figure_of(wildcards)))


def claims_settings(wildcards):
    """What rule claims reads of a paper's figures, by name (Figure.claims_settings)."""
    return {f.name: f.claims_settings() for f in RUNS.paper_figures(wildcards.paper)}


def run_outputs(run_ids):
    return [f"results/runs/{rid}/{name}" for rid in run_ids for name in ("metrics.csv", "run.json")]


def paper_outputs(paper):
    # a drawing is figures/<paper>/<name>.{pdf,png}, a table figure .{csv,md,tex} (Figure.formats)
    figures = RUNS.paper_figures(paper)
    return [f"figures/{paper}/{f.name}.{ext}" for f in figures for ext in f.formats] + [
        f"results/claims/{paper}.csv",
        f"results/claims/{paper}.html",
        f"figures/{paper}/claims.png",
    ]


def paper_targets(paper):
    """A paper's outputs, their audit (rule audit_paper) and the runs behind them: Snakemake does not remake a
    missing input of a job whose output is up to date, so a run deleted after its figure was built is remade
    (and everything built from it redone) only because the target names it."""
    figures = RUNS.paper_figures(paper) + [f for a in RUNS.alternatives.get(paper, []) for f in a.figures.values()]
    runs = sorted({rid for f in figures for rid in f.run_ids})
    return paper_outputs(paper) + [f"results/audit/{paper}.html"] + run_outputs(runs)


def train_inputs(wildcards):
    return RUNS.input_files(wildcards.run_id)


def train_gpus(wildcards):
    """At paper scale, a job of an engine that trains networks asks a cluster for one GPU."""
    spec = RUNS.runs[wildcards.run_id]
    return int(RUNS.scale == "paper" and ENGINES[spec["engine"]].trains_networks)


def train_runtime(wildcards):
    spec = RUNS.runs[wildcards.run_id]
    return ENGINES[spec["engine"]].runtime_minutes(spec)
