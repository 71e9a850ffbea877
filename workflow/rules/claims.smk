# Check each claim of a paper against our figure tables: PASS / FAIL / INCONCLUSIVE, each with its
# bootstrap support and margin (the bootstrap's settings in the .json), and the claims figure. Its params are
# what it reads of the figures (plain data, which Snakemake records: a change reruns it, a new title does not).


rule claims:
    input:
        tables=lambda wildcards: [
            f"results/{wildcards.paper}/{f.name}.csv" for f in RUNS.paper_figures(wildcards.paper)
        ],
        digests=lambda wildcards: [
            f"results/{wildcards.paper}/{f.name}.csv.sha256" for f in RUNS.paper_figures(wildcards.paper)
        ],
        alternatives=lambda wildcards: RUNS.alternative_tables(wildcards.paper),
        alternative_digests=lambda wildcards: [f"{t}.sha256" for t in RUNS.alternative_tables(wildcards.paper)],
        claims="config/claims/{paper}.yaml",
    output:
        ledger=report(
            "results/claims/{paper}.csv",
            caption="../report/claims.rst",
            category="{paper}",
            subcategory="claims",
            labels={"figure": "claims ledger (CSV)"},
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
        scale_note=lambda wildcards: RUNS.scale_note(wildcards.paper),
        readings=lambda wildcards: RUNS.readings[wildcards.paper],
        alternatives=lambda wildcards: RUNS.alternatives_settings(wildcards.paper),
    log:
        "logs/claims/{paper}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/claims.py"


# The ledger as an HTML table: the report shows it in place (a CSV only as a download).
rule claims_table:
    input:
        "results/claims/{paper}.csv",
    output:
        report(
            "results/claims/{paper}.html",
            caption="../report/claims.rst",
            category="{paper}",
            subcategory="claims",
            labels={"figure": "claims ledger"},
        ),
    params:
        scale_note=lambda wildcards: RUNS.scale_note(wildcards.paper),
    log:
        "logs/claims_table/{paper}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/claims_table.py"
