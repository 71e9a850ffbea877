"""The workflow's files name no dataset, image mode or data path themselves: they take them from the registries
(data/registry.py, data/sources.py, data/multiview.py) and the path functions (data/inputs.py), so that a dataset
added there, or a folder renamed, cannot leave a rule behind."""

import io
import re
import tokenize
from pathlib import Path

from fedrepro.data.multiview import CHANNEL_MODES
from fedrepro.data.registry import REGISTRY
from fedrepro.data.sources import STAND_INS, USER_DATASETS

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
NAMES = {*REGISTRY, *USER_DATASETS, *STAND_INS, *CHANNEL_MODES.values()}
PATHS = ("data/raw", "data/prepared")


def strings(path: Path) -> list[str]:
    """The string literals of a workflow file (its comments left out)."""
    return [tok.string for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", None)]


def spelt(text: str) -> set[str]:
    return {name for name in NAMES if re.search(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", text)} | {
        p for p in PATHS if p in text}


def test_no_rule_spells_a_dataset_a_mode_or_a_data_path():
    found = {path.name: sorted(set().union(*map(spelt, strings(path)))) for path in WORKFLOW}
    assert {name: names for name, names in found.items() if names} == {}


def test_the_check_sees_a_spelt_name():
    assert spelt('"data/raw/mimic3_ihm/x"') == {"data/raw", "mimic3_ihm"} and spelt('"cifar10_splitpair_x"') == set()
