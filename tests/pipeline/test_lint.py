"""`make lint`: Snakemake's linter finds nothing in the workflow but its one recommendation that does not apply here,
a conda environment or container per rule (the project installs into .venv from requirements.lock). Snakemake's
`--lint` exits 1 on that alone, and its `--lint json` prints text (9.27), so the lints are read from the text."""

import re

from workflow_copy import BIN, REPO, run

NOT_APPLICABLE = "Specify a conda environment or container for each rule."


def lints(said: str) -> list[tuple[str, str]]:
    """(where, title) of each lint of `snakemake --lint`'s report."""
    return [(where, title) for where, body in re.findall(r"^Lints for (.+?):\n((?:[ \t]+.*\n?|\n)*)", said, re.M)
            for title in re.findall(r"^ {4}\* (.+?):$", body, re.M)]


def test_snakemake_lint_finds_nothing_but_the_conda_recommendation():
    done = run(BIN / "snakemake", "--lint", cwd=REPO, check=False)
    said = done.stdout + done.stderr
    assert "Lints for" in said or "Congratulations" in said, said[-3000:]  # the workflow was parsed and linted
    assert [lint for lint in lints(said) if lint[1] != NOT_APPLICABLE] == []


def test_a_lint_is_read_with_where_it_is():
    said = ("Lints for snakefile /x/Snakefile:\n    * Mixed rules and functions in same snakefile.:\n      Small one.\n\n"
            "Lints for rule a (line 3, /x/a.smk):\n    * Specify a conda environment or container for each rule.:\n")
    assert lints(said) == [("snakefile /x/Snakefile", "Mixed rules and functions in same snakefile."),
                           ("rule a (line 3, /x/a.smk)", NOT_APPLICABLE)]
