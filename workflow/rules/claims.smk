# Check each claim of a paper against our figure tables: PASS / FAIL / INCONCLUSIVE.


rule claims:
    input:
        tables=lambda wildcards: [
            f"results/{wildcards.paper}/{f.name}.csv" for f in RUNS.paper_figures(wildcards.paper)
        ],
        claims="config/claims/{paper}.yaml",
    output:
        report(
            "results/claims/{paper}.csv",
            caption="../report/claims.rst",
            category="{paper}",
            labels={"figure": "claims ledger"},
        ),
    params:
        scale=config["scale"],
        figures=lambda wildcards: RUNS.paper_figures(wildcards.paper),
    log:
        "logs/claims/{paper}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/claims.py"
