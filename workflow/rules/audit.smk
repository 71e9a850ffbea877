# A reviewer's audit of each paper's results (src/fedrepro/results/audit.py): the runs behind every figure
# checked against what they recorded (hashes of metrics and data), this checkout (code, packages) and DVC's
# record; figure tables against their runs; the claims' verdicts. Written as Markdown and HTML (in the
# report); mismatches are listed there, not raised: aggregate already refuses a changed metrics.csv, and
# `fedrepro audit` gives the same audit with an exit status (and can rerun runs).


rule audit_paper:
    input:
        lambda wildcards: paper_outputs(wildcards.paper, wildcards.scale),
    output:
        md=str(OUT.audit("{paper}", "md")),
        html=report(
            str(OUT.audit("{paper}", "html")),
            caption="../report/audit.rst",
            category="{paper}",
            subcategory="audit",
            labels={"figure": "audit"},
        ),
    params:
        figures=lambda wildcards: FigureList(run_table(wildcards.scale).paper_figures(wildcards.paper)),
        alternatives=lambda wildcards: FigureList(run_table(wildcards.scale).alternatives.get(wildcards.paper, [])),
        ledger=lambda wildcards: run_table(wildcards.scale).ledger_settings(wildcards.paper),  # rebuilt and compared
    log:
        str(OUT.logs / "audit" / "{paper}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "audit" / "{paper}.tsv"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/audit.py"


rule audit:
    input:
        [str(Layout(config["scale"]).audit(paper)) for paper in config["papers"]],
