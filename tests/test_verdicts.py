"""The verdict names are written once, in fedrepro/verdicts.py: no other module of the library spells one."""

import ast
from pathlib import Path

from fedrepro.verdicts import VERDICTS

SRC = Path(__file__).resolve().parents[1] / "src" / "fedrepro"
OWN_STATUS = {("results/audit.py", "FAIL")}  # the audit's own status of a check (OK, WARN, MISSING, FAIL)


def test_no_module_but_verdicts_spells_a_verdict():
    spelt = [(path.relative_to(SRC).as_posix(), node.value, node.lineno) for path in sorted(SRC.rglob("*.py"))
             if path.name != "verdicts.py" for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and node.value in VERDICTS]
    assert [s for s in spelt if s[:2] not in OWN_STATUS] == []
