# What the rules share: the configuration, validated once; the run table of each scale; the wildcards; the input
# and param functions. Everything is looked up in the run table of the job's scale (run_table) and written in that
# scale's tree: OUT's patterns have a {scale} wildcard (fedrepro/layout.py).
import dataclasses
from pathlib import Path

from fedrepro.claims.seed_plan import planned_table, settings_of as plan_settings, stage_look, stage_plan
from fedrepro.data import REGISTRY, absolute_mirror_env, mimic3_ihm
from fedrepro.data.inputs import MULTIVIEW_DATASETS, folder_path, npz_path, provenance_path
from fedrepro.data.multiview import CHANNEL_MODES, folder_name
from fedrepro.data.registry import RAW_DIR
from fedrepro.data.sources import STAND_INS, USER_DATASETS
from fedrepro.data.views import VIEW_NAME, VIEWS
from fedrepro.engines import ENGINES
from fedrepro.errors import ConfigError, ResultsError
from fedrepro.experiments.runtable import Figure, FigureList
from fedrepro.layout import CLAIMS_FIGURE, Layout
from fedrepro.report_pages import Overview, figure_text, report_group, rst_text
from fedrepro.results.cost import train_memory_mb, train_peaks
from fedrepro.schemas import SCALES
from fedrepro.utils.digest import DIGEST_HEX, config_digest
from fedrepro.validate import check_device, load_and_validate

# $FEDREPRO_DATA_MIRROR as given, made absolute here: every job inherits the folder it names, wherever it runs
absolute_mirror_env()


SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"


def staged(table):
    """The run table at the workflow's stage: under seed_plan adaptive, once `fedrepro seed-plan` has written
    results/<scale>/seed_plan.json, with the runs it adds and the figures that read them (the second stage;
    claims/seed_plan.py), else as configured. Its plan is kept for rule claims' look (claim_look)."""
    PLANS[table.scale] = stage_plan(config["seed_plan"], Layout(table.scale).results,
                                    plan_settings(config, table.scale).max_seeds)
    return planned_table(table, PLANS[table.scale])


PLANS = {}
try:
    config, RUNS = load_and_validate(config, Path("config"), SCHEMAS)
    RUNS = staged(RUNS)
except (ConfigError, ResultsError) as error:
    raise WorkflowError(str(error)) from None
RUN_TABLES = {config["scale"]: RUNS}
SETTINGS = dict(config)  # as validated; the report's front page is no setting
# read when the report renders (workflow.rst), which a ledger or figure not as written stops with a WorkflowError
config["overview"] = Overview(Path("."), config["scale"], WorkflowError)
PAPERS = sorted({paper for paper, _ in RUNS.figures})


def run_table(scale):
    """The runs and figures of a scale, resolved and validated once: the configured scale's at start-up, another
    (a target such as figures/smoke/...) when a rule first asks for it."""
    if scale not in RUN_TABLES:
        try:
            RUN_TABLES[scale] = staged(load_and_validate({**SETTINGS, "scale": scale}, Path("config"), SCHEMAS)[1])
        except (ConfigError, ResultsError) as error:
            raise WorkflowError(str(error)) from None
    return RUN_TABLES[scale]


def claim_look(wildcards):
    """The look at which a paper's claims are judged (claims/seed_plan.py stage_look) as plain data, so that a
    new look or plan reruns them."""
    run_table(wildcards.scale)
    return dataclasses.asdict(stage_look(config["seed_plan"], PLANS[wildcards.scale], wildcards.paper,
                                         Layout(wildcards.scale).results,
                                         plan_settings(config, wildcards.scale).max_seeds))


onstart:
    # Before the first job, when jobs run on this machine (a cluster's nodes are not this machine; a dry run
    # runs nothing): device=cuda needs a GPU here.
    if workflow.local_exec and not workflow.touch:
        try:
            check_device(config["device"])
        except ConfigError as error:
            raise WorkflowError(str(error)) from None


OUT = Layout("{scale}")
# The data's names, from their registries (data/registry.py, data/sources.py): what the user provides or a stand-in
# replaces, as one .npz or as a multi-view folder (data/inputs.py).
USER_NPZ = [key for key in USER_DATASETS if key not in MULTIVIEW_DATASETS]
STANDIN_NPZ = [key for key in STAND_INS if key not in MULTIVIEW_DATASETS]
MULTIVIEW, MULTIVIEW_STANDIN = MULTIVIEW_DATASETS
CHANNELS = {mode: channels for channels, mode in CHANNEL_MODES.items()}  # a folder's <rgb|gray> -> image channels
GRAY = CHANNEL_MODES[1]  # the multi-view stand-in's only mode (data/synthetic.py twelve_view_batches)


wildcard_constraints:
    scale="|".join(SCALES),
    paper="|".join(PAPERS),
    dataset="|".join([*REGISTRY, *STANDIN_NPZ]),  # a view's; download and prepare narrow it to REGISTRY
    user_dataset="|".join(USER_DATASETS),
    standin="|".join(STAND_INS),
    mode="|".join(CHANNEL_MODES.values()),
    side=r"\d+",
    run_id=f"[0-9a-f]{{{DIGEST_HEX}}}",
    figure=rf"(?!{CLAIMS_FIGURE}\b)[A-Za-z0-9_]+",  # figures/<scale>/<paper>/claims.* is the claims rule's figure
    view="|".join(VIEWS),
    reading="[A-Za-z0-9_]+",
    alternative="[A-Za-z0-9_]+",


def user_raw_files(wildcards):
    """The user's files rule register_user_data hashes (MIMIC-III's; ModelNet40's PNGs are listed by the
    rule itself), so that replacing one registers and prepares the data again."""
    if wildcards.user_dataset == mimic3_ihm.KEY:
        return [str(p) for p in mimic3_ihm.raw_files(f"{RAW_DIR}/{wildcards.user_dataset}")]
    return []


def figure_of(wildcards):
    return run_table(wildcards.scale).figure(wildcards.paper, wildcards.figure)


def alternative_figure(wildcards):
    alternative = run_table(wildcards.scale).alternative(wildcards.paper, wildcards.reading, wildcards.alternative)
    return alternative.figures[wildcards.figure]


def settings_of(part):
    """A param of a figure's job: the digest of the part of its figure that the job reads (e.g.
    Figure.table_settings). Snakemake reruns a job whose params changed (a default rerun trigger), so a
    new title redraws the figure and a new curve label rebuilds its table, without retraining."""
    return lambda wildcards: config_digest(part(figure_of(wildcards)))


def claims_settings(wildcards):
    """What rule claims reads of a paper's figures, by name (Figure.claims_settings)."""
    return {f.name: f.claims_settings() for f in run_table(wildcards.scale).paper_figures(wildcards.paper)}


def paper_tables(wildcards):
    out = Layout(wildcards.scale)
    return [str(out.table(wildcards.paper, f.name)) for f in run_table(wildcards.scale).paper_figures(wildcards.paper)]


def run_outputs(scale, run_ids):
    return [str(Layout(scale).runs / rid / name) for rid in run_ids for name in ("metrics.csv", "run.json")]


def page_source(wildcards):
    """What a figure's page shows: its PNG, or a table figure's Markdown."""
    return figure_of(wildcards).kind.shown


def paper_outputs(paper, scale):
    # a drawing is <name>.{pdf,png}, a table figure <name>.{csv,md,tex} (Figure.formats); each has its page (.html)
    out = Layout(scale)
    return [str(out.figure(paper, f.name, ext)) for f in run_table(scale).paper_figures(paper)
            for ext in (*f.formats, "html")] + [
        str(out.ledger(paper, "csv")),
        str(out.ledger(paper, "html")),
        str(out.claims_figure(paper, "png")),
    ]


def paper_targets(paper, scale):
    """A paper's outputs, their audit (what audit_paper writes) and the runs behind them: Snakemake does not remake a
    missing input of a job whose output is up to date, so a run deleted after its figure was built is remade
    (and everything built from it redone) only because the target names it."""
    table = run_table(scale)
    figures = table.paper_figures(paper) + [f for a in table.alternatives.get(paper, []) for f in a.figures.values()]
    runs = sorted({rid for f in figures for rid in f.run_ids})
    return paper_outputs(paper, scale) + [str(Layout(scale).audit(paper))] + run_outputs(scale, runs)


def run_spec(wildcards):
    try:
        return run_table(wildcards.scale).runs[wildcards.run_id]
    except KeyError:
        raise WorkflowError(f"run {wildcards.run_id} is not a run of the {wildcards.scale} scale under this "
                            f"configuration (`fedrepro list` names the papers and figures)") from None


def train_inputs(wildcards):
    run_spec(wildcards)
    return run_table(wildcards.scale).input_files(wildcards.run_id)


def train_gpus(wildcards):
    """At paper scale, a job of an engine that trains networks asks a cluster for one GPU."""
    return int(wildcards.scale == "paper" and ENGINES[run_spec(wildcards)["engine"]].trains_networks)


def train_runtime(wildcards):
    """The runtime one job of the run asks for, at most a usual cluster's limit: a longer run is resubmitted (rule
    train's retries) and goes on from its checkpoint (Engine.job_minutes, MAX_JOB_MINUTES)."""
    spec = run_spec(wildcards)
    return ENGINES[spec["engine"]].job_minutes(spec)


# the most jobs a run of the configured scale may take, one after another (Engine.jobs): rule train's retries
TRAIN_RETRIES = max((ENGINES[spec["engine"]].jobs(spec) for spec in RUNS.runs.values()), default=1) - 1
PEAKS = {}  # per scale, the recorded peak memory of its training jobs (results/cost.py train_peaks)


def train_mem(wildcards):
    """The memory a training job asks for: what its own benchmark record, else its paper's at the scale, shows
    (results/cost.py train_memory_mb), or the stated default without one."""
    if wildcards.scale not in PEAKS:
        PEAKS[wildcards.scale] = train_peaks(wildcards.scale)
    paper = run_spec(wildcards)["paper"]
    runs = [run_id for run_id, spec in run_table(wildcards.scale).runs.items() if spec["paper"] == paper]
    return train_memory_mb(wildcards.run_id, runs, PEAKS[wildcards.scale])
