# Check each claim of a paper against our figure tables: PASS / FAIL / INCONCLUSIVE, each with its
# bootstrap support and margin (the bootstrap's settings in the .json), and the claims figure. Its params are
# what it reads of the figures (plain data, which Snakemake records: a change reruns it, a new title does not).


rule claims:
    input:
        tables=lambda wildcards: [
            f"results/{wildcards.paper}/{f.name}.csv" for f in RUNS.paper_figures(wildcards.paper)
        ],
        claims="config/claims/{paper}.yaml",
    output:
        ledger=report(
            "results/claims/{paper}.csv",
            caption="../report/claims.rst",
            category="{paper}",
            subcategory="claims",
            labels={"figure": "claims ledger"},
        ),
        record="results/claims/{paper}.json",
        pdf="figures/{paper}/claims.pdf",
        png=report(
            "figures/{paper}/claims.png",
            caption="../report/claims_figure.rst",
            category="{paper}",
            subcategory="claims",
            labels={"figure": "claims support"},
        ),
    params:
        scale=config["scale"],
        figures=claims_settings,
    log:
        "logs/claims/{paper}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/claims.py"
