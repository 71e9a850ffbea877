# One job per run: results/runs/<run_id>/ holds metrics.csv and run.json (provenance).


def train_inputs(wildcards):
    datasets = RUNS.datasets(wildcards.run_id)
    return {
        "prepared": [f"data/prepared/{d}.npz" for d in datasets],
        "provenance": [f"data/raw/{d}/PROVENANCE.json" for d in datasets],
    }


def train_runtime(wildcards):
    # minutes; a generous bound from ~5 ms per round on one CPU core, for cluster schedulers
    spec = RUNS.runs[wildcards.run_id]
    return 10 + int(spec["seeds"] * spec["rounds"] * spec.get("K", 1) * 0.5e-3)


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
    script:
        "../../scripts/train.py"
