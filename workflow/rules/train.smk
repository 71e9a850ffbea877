# One job per run: results/runs/<run_id>/ holds metrics.csv and run.json (provenance).


rule train:
    input:
        unpack(train_inputs),
    output:
        metrics="results/runs/{run_id}/metrics.csv",
        record="results/runs/{run_id}/run.json",
    params:
        spec=lambda wildcards: RUNS.runs[wildcards.run_id],
        device=config["device"],
    log:
        "logs/train/{run_id}.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=train_runtime,
        gpu=train_gpus,
    script:
        "../../scripts/train.py"
