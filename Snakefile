# fedrepro: reproduce the figures and claims of five federated-learning papers.
#   snakemake --cores all                         everything selected by config/config.yaml
#   snakemake --cores 2 fedpage                   one paper
#   snakemake --cores 2 figures/fedpage/fig2a.pdf one figure (reuses cached runs)
#   snakemake --cores 2 --config scale=paper -- fedpage   one paper at its own settings (`--` ends --config)
from pathlib import Path

from snakemake.utils import min_version

from fedrepro.errors import ConfigError
from fedrepro.validate import check_device, load_and_validate

min_version("9.0")


configfile: "config/config.yaml"


try:
    config, RUNS = load_and_validate(config, Path("config"), Path(workflow.basedir) / "workflow" / "schemas")
except ConfigError as error:
    raise WorkflowError(str(error)) from None

PAPERS = sorted({paper for paper, _ in RUNS.figures})


onstart:
    # Before the first job, when jobs run on this machine (a cluster's nodes are not this machine; a dry run
    # runs nothing): device=cuda needs a GPU here.
    if workflow.local_exec and not workflow.touch:
        try:
            check_device(config["device"])
        except ConfigError as error:
            raise WorkflowError(str(error)) from None


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/audit.smk"


rule all:
    default_target: True
    input:
        [paper_targets(paper) for paper in config["papers"]],


for _paper in PAPERS:

    rule:
        name:
            _paper
        input:
            paper_targets(_paper),
