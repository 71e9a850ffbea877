# Check each claim of a paper against our figure tables: PASS / FAIL / INCONCLUSIVE, each with its
# bootstrap support and margin (the bootstrap's settings in the .json), and the claims figure. Its params are
# what it reads of the figures (plain data, which Snakemake records: a change reruns it, a new title does not).


rule claims:
    input:
        tables=paper_tables,
        digests=lambda wildcards: [f"{t}.sha256" for t in paper_tables(wildcards)],
        alternatives=lambda wildcards: run_table(wildcards.scale).alternative_tables(wildcards.paper),
        alternative_digests=lambda wildcards: [
            f"{t}.sha256" for t in run_table(wildcards.scale).alternative_tables(wildcards.paper)
        ],
        claims="config/claims/{paper}.yaml",
    output:
        ledger=report(
            str(OUT.ledger("{paper}", "csv")),
            caption="../report/claims.rst",
            category="{paper}",
            subcategory="claims",
            labels={"figure": "claims ledger (CSV)"},
        ),
        record=str(OUT.ledger("{paper}", "json")),
        pdf=str(OUT.claims_figure("{paper}", "pdf")),
        png=report(
            str(OUT.claims_figure("{paper}", "png")),
            caption="../report/claims_figure.rst",
            category="{paper}",
            subcategory="claims",
            labels={"figure": "claims support"},
        ),
        figure_record=str(OUT.claims_figure("{paper}", "sha256")),  # the claims figure's sha256 as drawn
    params:
        figures=claims_settings,
        scale_note=lambda wildcards: run_table(wildcards.scale).scale_note(wildcards.paper),
        note_rst=lambda wildcards: rst_text(run_table(wildcards.scale).scale_note(wildcards.paper)),  # claims.rst
        readings=lambda wildcards: run_table(wildcards.scale).readings[wildcards.paper],
        alternatives=lambda wildcards: run_table(wildcards.scale).alternatives_settings(wildcards.paper),
        seeds=lambda wildcards: run_table(wildcards.scale).seeds_record(wildcards.paper),
        look=claim_look,  # the seed plan's look and its planned claims (claims/sequential.py)
    log:
        str(OUT.logs / "claims" / "{paper}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "claims" / "{paper}.tsv"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/claims.py"


# The ledger as an HTML table: the report shows it in place (a CSV only as a download).
rule claims_table:
    input:
        str(OUT.ledger("{paper}", "csv")),
    output:
        report(
            str(OUT.ledger("{paper}", "html")),
            caption="../report/claims.rst",
            category="{paper}",
            subcategory="claims",
            labels={"figure": "claims ledger"},
        ),
    params:
        scale_note=lambda wildcards: run_table(wildcards.scale).scale_note(wildcards.paper),
        note_rst=lambda wildcards: rst_text(run_table(wildcards.scale).scale_note(wildcards.paper)),  # claims.rst
        names=lambda wildcards: run_table(wildcards.scale).method_names(wildcards.paper),
    log:
        str(OUT.logs / "claims_table" / "{paper}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "claims_table" / "{paper}.tsv"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/claims_table.py"
