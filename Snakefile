# fedrepro: reproduce the figures and claims of five federated-learning papers.
#   snakemake --cores all                         everything selected by config/config.yaml
#   snakemake --cores 2 fedpage                   one paper
#   snakemake --cores 2 figures/quick/fedpage/fig2a.pdf   one figure, at the scale its path names (reuses runs)
#   snakemake --cores 2 --config scale=paper -- fedpage   one paper at its own settings (`--` ends --config)
# Every output lies in its scale's tree: results/<scale>/, figures/<scale>/, logs/<scale>/ (fedrepro/layout.py).
from pathlib import Path

from snakemake.utils import min_version

from fedrepro.data import absolute_mirror_env
from fedrepro.errors import ConfigError
from fedrepro.report_pages import Overview
from fedrepro.validate import check_device, load_and_validate

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


# $FEDREPRO_DATA_MIRROR as given, made absolute here: every job inherits the folder it names, wherever it runs
absolute_mirror_env()


def run_table(scale):
    """The runs and figures of a scale, resolved and validated once: the configured scale's at start-up, another
    (a target such as figures/smoke/...) when a rule first asks for it."""
    if scale not in RUN_TABLES:
        try:
            RUN_TABLES[scale] = load_and_validate({**SETTINGS, "scale": scale}, Path("config"), SCHEMAS)[1]
        except ConfigError as error:
            raise WorkflowError(str(error)) from None
    return RUN_TABLES[scale]


SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"
try:
    config, RUNS = load_and_validate(config, Path("config"), SCHEMAS)
except ConfigError as error:
    raise WorkflowError(str(error)) from None
RUN_TABLES = {config["scale"]: RUNS}
SETTINGS = dict(config)  # as validated; the report's front page is no setting
# read when the report renders (workflow.rst), which a ledger or figure not as written stops with a WorkflowError
config["overview"] = Overview(Path("."), config["scale"], WorkflowError)
PAPERS = sorted({paper for paper, _ in RUNS.figures})


onstart:
    # Before the first job, when jobs run on this machine (a cluster's nodes are not this machine; a dry run
    # runs nothing): device=cuda needs a GPU here.
    if workflow.local_exec and not workflow.touch:
        try:
            check_device(config["device"])
        except ConfigError as error:
            raise WorkflowError(str(error)) from None


include: "workflow/rules/scheduling.smk"
include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/audit.smk"


rule all:
    default_target: True
    input:
        [paper_targets(paper, config["scale"]) for paper in config["papers"]],


for _paper in PAPERS:

    rule:
        name:
            _paper
        input:
            paper_targets(_paper, config["scale"]),
