# One job per run: results/<scale>/runs/<run_id>/ holds metrics.csv and run.json (provenance). A run longer than a
# cluster job's limit is one job after another, each resuming from the last one's checkpoint.


rule train:
    input:
        unpack(train_inputs),
    output:
        metrics=str(OUT.runs / "{run_id}" / "metrics.csv"),
        record=str(OUT.runs / "{run_id}" / "run.json"),
    params:
        spec=run_spec,
        device=config["device"],
    log:
        str(OUT.logs / "train" / "{run_id}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "train" / "{run_id}.tsv"),
    # one core a seed worker; the workers are an execution setting, not a param, so changing them reruns nothing
    threads: config["seed_workers"]
    resources:
        mem_mb=train_mem,
        runtime=train_runtime,
        gpu=train_gpus,
    # a run longer than one job's runtime goes on from its checkpoint in the next (engines/contract.py MAX_JOB_MINUTES)
    retries: TRAIN_RETRIES
    script:
        "../../scripts/train.py"
