# Tidy table behind each figure (the runs' metrics; their timelines for a figure of kind `gantt`: results/
# tables.py ROWS), then the figure itself: PDF + PNG for a drawing, CSV + Markdown + LaTeX for a figure of
# kind `table` (common.smk paper_targets asks for the files of each figure's kind). `settings` is a digest of
# what each job reads of its figure: a change to it reruns the job (common.smk settings_of).


rule aggregate:
    input:
        lambda wildcards: run_outputs(wildcards.scale, figure_of(wildcards).run_ids),
    output:
        str(OUT.table("{paper}", "{figure}")),
        str(OUT.table("{paper}", "{figure}")) + ".sha256",
    params:
        figure=figure_of,
        settings=settings_of(Figure.table_settings),
    log:
        str(OUT.logs / "aggregate" / "{paper}" / "{figure}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "aggregate" / "{paper}" / "{figure}.tsv"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/aggregate.py"


# The table of one figure under an alternative reading (config readings: all): the same rows, from the runs the
# alternative's patch gives (runs it does not change are the figure's own, trained once).
rule aggregate_reading:
    input:
        lambda wildcards: run_outputs(wildcards.scale, alternative_figure(wildcards).run_ids),
    output:
        str(OUT.reading_table("{paper}", "{reading}", "{alternative}", "{figure}")),
        str(OUT.reading_table("{paper}", "{reading}", "{alternative}", "{figure}")) + ".sha256",
    params:
        figure=alternative_figure,
        settings=lambda wildcards: config_digest(alternative_figure(wildcards).table_settings()),
    log:
        str(OUT.logs / "aggregate" / "{paper}" / "readings" / "{reading}" / "{alternative}" / "{figure}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "aggregate" / "{paper}" / "readings" / "{reading}" / "{alternative}" / "{figure}.tsv"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/aggregate.py"


rule plot:
    input:
        table=str(OUT.table("{paper}", "{figure}")),
        digest=str(OUT.table("{paper}", "{figure}")) + ".sha256",
    output:
        pdf=str(OUT.figure("{paper}", "{figure}", "pdf")),
        png=str(OUT.figure("{paper}", "{figure}", "png")),
        record=str(OUT.figure("{paper}", "{figure}", "sha256")),  # their sha256 as drawn (the audit's)
    params:
        figure=figure_of,
        settings=settings_of(Figure.drawing_settings),
    log:
        str(OUT.logs / "plot" / "{paper}" / "{figure}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "plot" / "{paper}" / "{figure}.tsv"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/plot.py"


rule table:
    input:
        table=str(OUT.table("{paper}", "{figure}")),
        digest=str(OUT.table("{paper}", "{figure}")) + ".sha256",
    output:
        csv=str(OUT.figure("{paper}", "{figure}", "csv")),
        md=str(OUT.figure("{paper}", "{figure}", "md")),
        tex=str(OUT.figure("{paper}", "{figure}", "tex")),
        record=str(OUT.figure("{paper}", "{figure}", "sha256")),  # their sha256 as written (the audit's)
    params:
        figure=figure_of,
        settings=settings_of(Figure.drawing_settings),
    log:
        str(OUT.logs / "table" / "{paper}" / "{figure}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "table" / "{paper}" / "{figure}.tsv"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/table.py"


# A figure's page in the HTML report (the report's item for the figure): the drawing (or the table), what its
# runs ran on (their run.json) and the ledger rows that read it (fedrepro/report_pages.py).
rule figure_page:
    input:
        drawing=lambda wildcards: str(Layout(wildcards.scale).figure(wildcards.paper, wildcards.figure, page_source(wildcards))),
        ledger=str(OUT.ledger("{paper}", "csv")),
        records=lambda wildcards: run_outputs(wildcards.scale, figure_of(wildcards).run_ids)[1::2],
    output:
        report(
            str(OUT.figure("{paper}", "{figure}", "html")),
            caption="../report/figure.rst",
            category="{paper}",
            subcategory=lambda wildcards: report_group(figure_of(wildcards)),
            labels=lambda wildcards: {"figure": wildcards.figure, "title": figure_of(wildcards).title},
        ),
    params:
        figure=figure_of,
        text=lambda wildcards: figure_text(figure_of(wildcards)),  # the report caption's words, escaped
        settings=settings_of(Figure.drawing_settings),
        names=lambda wildcards: run_table(wildcards.scale).method_names(wildcards.paper),
    log:
        str(OUT.logs / "figure_page" / "{paper}" / "{figure}.log"),
    benchmark:
        str(OUT.logs / "benchmarks" / "figure_page" / "{paper}" / "{figure}.tsv"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/figure_page.py"
