# Download (canonical host or mirror, checksummed) and decode each dataset once.


localrules:
    download,
    register_user_data,
    describe_standin,


rule download:
    output:
        "data/raw/{dataset}/PROVENANCE.json",
    wildcard_constraints:
        dataset="|".join(REGISTRY),
    params:
        mirror=config["data_mirror"],
    log:
        "logs/download/{dataset}.log",
    benchmark:
        "logs/benchmarks/download/{dataset}.tsv",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=60,
    script:
        "../../scripts/download.py"


rule prepare:
    input:
        "data/raw/{dataset}/PROVENANCE.json",
    output:
        "data/prepared/{dataset}.npz",
    wildcard_constraints:
        dataset="|".join(REGISTRY),
    log:
        "logs/prepare/{dataset}.log",
    benchmark:
        "logs/benchmarks/prepare/{dataset}.tsv",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../../scripts/prepare.py"


# Model inputs (crop, pool, standardise) computed once per dataset and view, not in every job.
rule view:
    input:
        "data/prepared/{dataset}.npz",
    output:
        "data/prepared/{dataset}-{view}.npz",
    log:
        "logs/view/{dataset}-{view}.log",
    benchmark:
        "logs/benchmarks/view/{dataset}-{view}.tsv",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../../scripts/view.py"


# Data the user provides under data/raw/<key>/ (MIMIC-III, ModelNet40 renders: data/sources.py). Without
# it a configuration uses the stand-in that sources.resolve_source names, and these rules never run.
rule register_user_data:
    input:
        user_raw_files,
    output:
        "data/raw/{user_dataset}/PROVENANCE.json",
    log:
        "logs/register/{user_dataset}.log",
    benchmark:
        "logs/benchmarks/register/{user_dataset}.tsv",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=60,
    script:
        "../../scripts/register_user_data.py"


rule prepare_user:
    input:
        "data/raw/{user_dataset}/PROVENANCE.json",
    output:
        "data/prepared/{user_dataset}.npz",
    wildcard_constraints:
        user_dataset="mimic3_ihm",
    params:
        dataset=lambda wildcards: wildcards.user_dataset,
        options={},
    log:
        "logs/prepare/{user_dataset}.log",
    benchmark:
        "logs/benchmarks/prepare/{user_dataset}.tsv",
    threads: 1
    resources:
        mem_mb=8000,
        runtime=30,
    script:
        "../../scripts/prepare_user.py"


# ModelNet40 12-view as uint8 memmaps at one image side, RGB or grey (data/multiview.py).
rule prepare_multiview:
    input:
        "data/raw/modelnet40_12view/PROVENANCE.json",
    output:
        directory("data/prepared/modelnet40_12view_{mode}{side}"),
    params:
        dataset="modelnet40_12view",
        options=lambda wildcards: {"side": int(wildcards.side), "channels": 3 if wildcards.mode == "rgb" else 1},
    log:
        "logs/prepare/modelnet40_12view_{mode}{side}.log",
    benchmark:
        "logs/benchmarks/prepare/modelnet40_12view_{mode}{side}.tsv",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../../scripts/prepare_user.py"


# Synthetic stand-ins (data/synthetic.py): what generated them, then the data at the paper's sizes.
rule describe_standin:
    output:
        "data/raw/{standin}/PROVENANCE.json",
    log:
        "logs/synthesize/{standin}-provenance.log",
    benchmark:
        "logs/benchmarks/synthesize/{standin}-provenance.tsv",
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../../scripts/synthesize.py"


rule synthesize:
    input:
        "data/raw/{standin}/PROVENANCE.json",
    output:
        "data/prepared/{standin}.npz",
    wildcard_constraints:
        standin="cifar10_splitpair|synthetic_ihm",
    params:
        dataset=lambda wildcards: wildcards.standin,
        options={},
    log:
        "logs/synthesize/{standin}.log",
    benchmark:
        "logs/benchmarks/synthesize/{standin}.tsv",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../../scripts/synthesize.py"


rule synthesize_multiview:
    input:
        "data/raw/synthetic_12view/PROVENANCE.json",
    output:
        directory("data/prepared/synthetic_12view_gray{side}"),
    params:
        dataset="synthetic_12view",
        options=lambda wildcards: {"side": int(wildcards.side)},
    log:
        "logs/synthesize/synthetic_12view_gray{side}.log",
    benchmark:
        "logs/benchmarks/synthesize/synthetic_12view_gray{side}.tsv",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    script:
        "../../scripts/synthesize.py"
