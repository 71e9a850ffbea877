"""The commands of the README and docs/ run as written: every `snakemake` command in its code blocks and inline code
as a dry run (`-n`) on a copy of the repository, every `fedrepro` command's subcommand with `--help`.
So the README cannot drift from the code (e.g. `--config` swallowing the target after it)."""

import re
import shlex
import sys
from pathlib import Path

import pytest

from workflow_copy import BIN, REPO, copy_checkout, run

pytestmark = pytest.mark.slow
PROGRAMS = ("snakemake", "fedrepro")
PLACEHOLDERS = {"<paper>": "fedvr"}  # the README's placeholders, and what a test run puts there


def readme_commands(text: str) -> list[list[str]]:
    """Every command line of a program in PROGRAMS, as arguments after the program: from the lines of
    the code blocks (comments dropped, VAR=value prefixes skipped) and from inline code."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    lines = [line for block in blocks for line in block.splitlines()]
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    lines += [span for span in re.findall(r"`([^`\n]+)`", prose) if " " in span]  # `fedrepro` alone is a name
    commands = []
    for line in lines:
        for placeholder, value in PLACEHOLDERS.items():
            line = line.replace(placeholder, value)
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]
        if words and Path(words[0]).name in PROGRAMS:
            commands.append([Path(words[0]).name, *words[1:]])
    return list({tuple(c): c for c in commands}.values())  # each once, in order


# the README and the docs it points to: a command moved into docs/ is still run
COMMANDS = readme_commands("\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]))
SNAKEMAKE = [c[1:] for c in COMMANDS if c[0] == "snakemake"]
FEDREPRO = [c[1:] for c in COMMANDS if c[0] == "fedrepro"]


def test_the_readme_has_its_commands():
    assert len(SNAKEMAKE) >= 5, SNAKEMAKE  # the "Using it" block at least: the extraction finds them
    assert any("--config" in c for c in SNAKEMAKE)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("readme")
    copy_checkout(work, git=False)
    return work


def _dry(args: list[str]) -> list[str]:
    """The command as a dry run. A report needs the outputs, so `--report FILE` is dropped: the rest
    (options, config, targets) is still parsed and planned."""
    if "--report" in args:
        i = args.index("--report")
        args = args[:i] + args[i + 2:]
    return ["-n", *args]


@pytest.mark.parametrize("args", SNAKEMAKE, ids=" ".join)
def test_readme_snakemake_command_plans(workdir, args):
    done = run(BIN / "snakemake", *_dry(args), cwd=workdir, check=False)
    assert done.returncode == 0, f"snakemake {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("args", FEDREPRO, ids=" ".join)
def test_readme_fedrepro_command_exists(args):
    """Its subcommand (the first word that is no option) answers --help."""
    sub = [a for a in args if not a.startswith("-")][:1]
    cli = "import sys; from fedrepro.cli import main; sys.argv[0] = 'fedrepro'; main()"
    done = run(sys.executable, "-c", cli, *sub, "--help", cwd=REPO, check=False)
    assert done.returncode == 0 and "usage: fedrepro" in done.stdout, f"fedrepro {' '.join(args)}:\n{done.stderr}"
