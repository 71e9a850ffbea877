# fedrepro: reproduce the figures and claims of five federated-learning papers.
#   snakemake --cores all                         everything selected by config/config.yaml
#   snakemake --cores 2 fedpage                   one paper
#   snakemake --cores 2 figures/quick/fedpage/fig2a.pdf   one figure, at the scale its path names (reuses runs)
#   snakemake --cores 2 --config scale=paper -- fedpage   one paper at its own settings (`--` ends --config)
# Every output lies in its scale's tree: results/<scale>/, figures/<scale>/, logs/<scale>/ (fedrepro/layout.py).
# The settings: config/README.md. What the rules share (the validated configuration, the run tables, the input
# functions): workflow/rules/common.smk.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/scheduling.smk"
include: "workflow/rules/cleanup.smk"
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
