# One job per run: results/<scale>/runs/<run_id>/ holds metrics.csv and run.json (provenance).


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
        mem_mb=3000,
        runtime=train_runtime,
        gpu=train_gpus,
    script:
        "../../scripts/train.py"
