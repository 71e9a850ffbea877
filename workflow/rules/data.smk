# Download (canonical host or mirror, checksummed) and decode each dataset once.
# Paths and names come from the code (data/inputs.py, data/views.py, data/multiview.py): data/raw/<key>/
# PROVENANCE.json, data/prepared/<key>.npz, its views data/prepared/<key>-<view>.npz, and a multi-view dataset's
# folder data/prepared/<key>_<rgb|gray><side>/ (tests/pipeline/test_workflow_names.py).


localrules:
    download,
    register_user_data,
    describe_standin,


rule download:
    output:
        provenance_path("{dataset}"),
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
        provenance_path("{dataset}"),
    output:
        npz_path("{dataset}"),
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
        npz_path("{dataset}"),
    output:
        npz_path(VIEW_NAME),
    log:
        f"logs/view/{VIEW_NAME}.log",
    benchmark:
        f"logs/benchmarks/view/{VIEW_NAME}.tsv",
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
        provenance_path("{user_dataset}"),
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
        provenance_path("{user_dataset}"),
    output:
        npz_path("{user_dataset}"),
    wildcard_constraints:
        user_dataset="|".join(USER_NPZ),
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
        provenance_path(MULTIVIEW),
    output:
        directory(folder_path(folder_name(MULTIVIEW, "{mode}", "{side}"))),
    params:
        dataset=MULTIVIEW,
        options=lambda wildcards: {"side": int(wildcards.side), "channels": CHANNELS[wildcards.mode]},
    log:
        f"logs/prepare/{folder_name(MULTIVIEW, '{mode}', '{side}')}.log",
    benchmark:
        f"logs/benchmarks/prepare/{folder_name(MULTIVIEW, '{mode}', '{side}')}.tsv",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../../scripts/prepare_user.py"


# Synthetic stand-ins (data/synthetic.py): what generated them, then the data at the paper's sizes.
rule describe_standin:
    output:
        provenance_path("{standin}"),
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
        provenance_path("{standin}"),
    output:
        npz_path("{standin}"),
    wildcard_constraints:
        standin="|".join(STANDIN_NPZ),
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
        provenance_path(MULTIVIEW_STANDIN),
    output:
        directory(folder_path(folder_name(MULTIVIEW_STANDIN, GRAY, "{side}"))),
    params:
        dataset=MULTIVIEW_STANDIN,
        options=lambda wildcards: {"side": int(wildcards.side)},
    log:
        f"logs/synthesize/{folder_name(MULTIVIEW_STANDIN, GRAY, '{side}')}.log",
    benchmark:
        f"logs/benchmarks/synthesize/{folder_name(MULTIVIEW_STANDIN, GRAY, '{side}')}.tsv",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    script:
        "../../scripts/synthesize.py"
