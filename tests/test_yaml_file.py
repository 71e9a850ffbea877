"""utils/yaml_file.py reads with libyaml's parser where PyYAML has one: every YAML file the project reads parses to
the same values as with the pure-Python safe loader (anchors, merges and flow mappings included)."""

from pathlib import Path

import pytest
import yaml

from fedrepro.utils.yaml_file import LOADER, read_yaml

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(p for d in ("config", "workflow/schemas", "profiles") for p in (ROOT / d).rglob("*.yaml"))


def test_the_fast_parser_is_used_where_pyyaml_has_it():
    assert len(FILES) > 20
    assert LOADER is (yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_file_parses_as_the_safe_loader_parses_it(path):
    assert read_yaml(path) == yaml.safe_load(path.read_text())


def test_it_refuses_what_the_safe_loader_refuses(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(yaml.constructor.ConstructorError):
        read_yaml(bad)
