# Download (canonical host or mirror, checksummed) and decode each dataset once.


localrules:
    download,


rule download:
    output:
        "data/raw/{dataset}/PROVENANCE.json",
    params:
        mirror=config["data_mirror"],
    log:
        "logs/download/{dataset}.log",
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
    log:
        "logs/prepare/{dataset}.log",
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
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../../scripts/view.py"
