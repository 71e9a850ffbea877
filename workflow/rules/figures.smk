# Tidy table behind each figure (the runs' metrics; their timelines for a figure of kind `gantt`: results/
# tables.py ROWS), then the figure itself: PDF + PNG for a drawing, CSV + Markdown + LaTeX for a figure of
# kind `table` (common.smk paper_targets asks for the files of each figure's kind). `settings` is a digest of
# what each job reads of its figure: a change to it reruns the job (common.smk settings_of).


rule aggregate:
    input:
        lambda wildcards: run_outputs(figure_of(wildcards).run_ids),
    output:
        "results/{paper}/{figure}.csv",
        "results/{paper}/{figure}.csv.sha256",
    params:
        figure=figure_of,
        settings=settings_of(Figure.table_settings),
    log:
        "logs/aggregate/{paper}/{figure}.log",
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
        lambda wildcards: run_outputs(alternative_figure(wildcards).run_ids),
    output:
        "results/{paper}/readings/{reading}/{alternative}/{figure}.csv",
        "results/{paper}/readings/{reading}/{alternative}/{figure}.csv.sha256",
    params:
        figure=alternative_figure,
        settings=lambda wildcards: config_digest(alternative_figure(wildcards).table_settings()),
    log:
        "logs/aggregate/{paper}/readings/{reading}/{alternative}/{figure}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/aggregate.py"


rule plot:
    input:
        table="results/{paper}/{figure}.csv",
        digest="results/{paper}/{figure}.csv.sha256",
    output:
        pdf="figures/{paper}/{figure}.pdf",
        png=report(
            "figures/{paper}/{figure}.png",
            caption="../report/figure.rst",
            category="{paper}",
            labels={"figure": "{figure}"},
        ),
    params:
        figure=figure_of,
        settings=settings_of(Figure.drawing_settings),
    log:
        "logs/plot/{paper}/{figure}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/plot.py"


rule table:
    input:
        table="results/{paper}/{figure}.csv",
        digest="results/{paper}/{figure}.csv.sha256",
    output:
        csv=report(
            "figures/{paper}/{figure}.csv",
            caption="../report/figure.rst",
            category="{paper}",
            labels={"figure": "{figure}"},
        ),
        md="figures/{paper}/{figure}.md",
        tex="figures/{paper}/{figure}.tex",
    params:
        figure=figure_of,
        settings=settings_of(Figure.drawing_settings),
    log:
        "logs/table/{paper}/{figure}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../../scripts/table.py"
