"""The workflow's schemas (workflow/schemas/), parsed once per process, and what they list: light to import,
so that a command that only names papers (`fedrepro list`, a misspelt paper) answers without loading the engines."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from fedrepro.errors import config_error
from fedrepro.utils.finite import non_finite
from fedrepro.utils.yaml_file import read_yaml

# The scales every paper defines, smallest first (config.schema.yaml `scale` lists the same).
SCALES = ("smoke", "quick", "paper")
# The devices a run may ask for (config `device`, `fedrepro run --device`): engines/context.py resolve_device
# turns auto into cuda where torch finds one, else cpu.
DEVICES = ("auto", "cpu", "cuda")

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = REPO_ROOT / "workflow" / "schemas"


@functools.lru_cache(maxsize=None)
def schema(name: str, schema_dir: Path = SCHEMA_DIR) -> dict[str, Any]:
    """A schema, parsed once per process (start-up checks every resolved run against its engine's);
    callers must not modify it."""
    return read_yaml(schema_dir / name)


def known_papers(schema_dir: Path = SCHEMA_DIR) -> list[str]:
    """The papers the project reproduces (config.schema.yaml `papers`)."""
    return list(schema("config.schema.yaml", schema_dir)["properties"]["papers"]["items"]["enum"])


def _describe(error: Any, at: str = "") -> str:
    """A jsonschema.ValidationError as one line that says where it is and what is allowed."""
    where = ".".join([at] * bool(at) + [str(p) for p in error.absolute_path]) or "(top level)"
    if error.validator == "enum":
        return f"{where}: {error.instance!r} is not allowed; allowed values: {', '.join(map(str, error.validator_value))}"
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
        return f"{where}: {error.message}{hint}"
    if error.validator == "not" and set(error.validator_value) == {"required"}:  # a setting another one rules out
        return f"{where}: {', '.join(error.validator_value['required'])} does not apply with these settings"
    if error.validator == "items" and isinstance(error.validator_value, dict) and "enum" in error.validator_value:
        return f"{where}: allowed values: {', '.join(error.validator_value['enum'])}"
    return f"{where}: {error.message}"


def check_against(instance: Any, schema: dict[str, Any], source: str, at: str = "") -> None:
    """Raise ConfigError listing every violation of `schema` by `instance`, which lies at `at` in `source`. NaN and
    infinity are refused first, wherever they are: JSON Schema's bounds let NaN through (every comparison with it is
    false), and no setting means either."""
    import jsonschema  # here: naming papers needs no validator

    nonfinite = [f"{'.'.join(filter(None, [at, where]))}: {value} is not a finite number (NaN and infinity are "
                 f"refused)" for where, value in non_finite(instance)]
    if nonfinite:
        raise config_error(f"invalid configuration in {source}", nonfinite)

    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(instance),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise config_error(f"invalid configuration in {source}", [_describe(e, at) for e in errors])


def check(instance: Any, schema_name: str, source: str, schema_dir: Path = SCHEMA_DIR) -> None:
    """Raise ConfigError listing every violation of the schema `schema_name` in `instance`."""
    check_against(instance, schema(schema_name, schema_dir), source)
