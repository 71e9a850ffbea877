"""Claims files checked to the leaf before any job runs: keys, checks and parameters, each parameter's
type (its annotation in the check's signature), and what it names in the claim's figure tables (the
markers of claims/checks/common.py: selectors, columns, values, statistics, bounds). A typo is an error
naming the claim, the key, the value and what is allowed, never a claim that selects nothing."""

from __future__ import annotations

import collections.abc
import math
import re
import types
import typing
from typing import Annotated, Any, Collection, Literal, Mapping, Union

from fedrepro.claims.checks import CHECKS, check_hints, check_parameters
from fedrepro.claims.checks.common import Above, Names, OneOf
from fedrepro.claims.checks.inference import SEED_TESTS
from fedrepro.claims.kinds import PAPER, kind_of, kind_problems
from fedrepro.errors import ConfigError, config_error
from fedrepro.schemas import SCALES

# keys of a claim entry that are not parameters of its check
CLAIM_FIELDS = {"id", "kind", "quote", "figures", "check", "expected", "note", "min_seeds", "undecided_at",
                "rests_on", "departs", "not_tested", "section"}


def claim_params(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a claim gives its check: every key but CLAIM_FIELDS."""
    return {k: v for k, v in claim.items() if k not in CLAIM_FIELDS}


# top-level keys of a claims file (each check names its own metric, x column and window); `methods`: the paper's
# own methods (their `methods` keys in config/papers/<paper>.yaml): a curve of any other never enters a paper claim;
# `seed_test`: how its seeds are tested (inference.SEED_TESTS; default t)
LEDGER_FIELDS = {"paper", "methods", "claims", "seed_test"}
# Per figure of a paper, each label column of its table and the values it takes at the paper scale, in the
# paper's terms (experiments/runtable.py label_values): what a claim may name.
FigureLabels = Mapping[str, Mapping[str, Collection[Any]]]
SHOWN = 20  # allowed values listed in a message (a column may hold hundreds of run ids)
# Words of degree in a paper's sentence that a check must weigh or own up to (docs/claims.md, "Where a check departs
# from the sentence"): a paper claim whose quote has one rests on a reading of source `quantified` (our number for
# the word, with alternatives), or names the word in `not_tested`, or has a check that is the word's own test.
QUALIFIERS = ("much", "significantly", "slightly", "substantially", "considerably", "greatly", "dramatically",
              "almost", "nearly", "comparable")
QUALIFIER_CHECKS = {"slight": "slightly"}  # check -> the word its test is


def validate_claims(claims_cfg: Any, source: str, figures: FigureLabels | None = None,
                    readings: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Stop on a claims file that would be judged wrongly: an unknown key, check or figure, a missing,
    misspelt or mistyped check parameter (a silently ignored one would change the verdict), a repeated
    id; with `figures`, every column and value a parameter names must exist in the claim's figures; with
    `readings` (the paper's, by name), every reading a claim rests on must be one of them, and every word of degree
    in a paper claim's quote weighed (unweighed_qualifiers)."""
    if not isinstance(claims_cfg, dict) or not isinstance(claims_cfg.get("claims"), list):
        raise ConfigError(f"{source}: expected a mapping with a list under 'claims'")
    problems = [f"unknown key {k!r}; allowed keys: {', '.join(sorted(LEDGER_FIELDS))}"
                for k in sorted(set(claims_cfg) - LEDGER_FIELDS)]
    methods = claims_cfg.get("methods", ["(none given)"])
    if not (isinstance(methods, list) and methods and all(isinstance(m, str) for m in methods)):
        problems.append(f"methods: the list of the paper's own methods, which alone its claims compare, got {methods!r}")
    elif figures is not None and "methods" in claims_cfg:
        drawn = {m for table in figures.values() for m in table.get("method", ())}
        problems += [f"methods: {m!r} is no method of the paper's figures; they draw {_listed(drawn)}"
                     for m in methods if m not in drawn]
    if claims_cfg.get("seed_test", "t") not in SEED_TESTS:
        problems.append(f"seed_test: {claims_cfg['seed_test']!r} is not one of {', '.join(SEED_TESTS)} (t: the paired "
                        f"t-test of the mean effect; sign: the exact sign test of the typical seed)")
    seen: set[str] = set()
    for i, claim in enumerate(claims_cfg["claims"]):
        where = f"claim {claim['id']}" if isinstance(claim, dict) and "id" in claim else f"claims[{i}]"
        if not isinstance(claim, dict) or "id" not in claim or "check" not in claim:
            problems.append(f"{where}: needs at least 'id' and 'check'")
            continue
        if claim["id"] in seen:
            problems.append(f"{where}: id {claim['id']!r} is used twice")
        seen.add(claim["id"])
        problems += [f"{where}: {p}" for p in _claim_problems(claim, figures)]
        rests_on = claim.get("rests_on", [])
        if not isinstance(rests_on, list) or not all(isinstance(r, str) for r in rests_on):
            problems.append(f"{where}: rests_on: a list of reading names, got {rests_on!r}")
        elif readings is not None:
            problems += [f"{where}: rests_on: unknown reading {r!r}; readings of this paper: "
                         f"{', '.join(sorted(readings)) or '(none)'}" for r in rests_on if r not in readings]
            problems += [f"{where}: quote says {w!r}, which its check does not weigh: rest it on a reading of "
                         f"source 'quantified' (our number for the word, with alternatives) or name '{w}' in "
                         f"not_tested" for w in unweighed_qualifiers(claim, readings)]
    if problems:
        raise config_error(f"invalid claims in {source}", problems)


def unweighed_qualifiers(claim: Mapping[str, Any], readings: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The QUALIFIERS in a paper claim's quote that nothing weighs: no rested-on reading of source `quantified`,
    no mention in `not_tested` (as 'word...), and a check that is not the word's own test."""
    if kind_of(dict(claim)) != PAPER:
        return []
    quote, not_tested = str(claim.get("quote", "")).lower(), str(claim.get("not_tested", "")).lower()
    if any(readings.get(r, {}).get("source") == "quantified" for r in claim.get("rests_on", [])):
        return []
    return [w for w in QUALIFIERS if re.search(rf"\b{w}\b", quote) and f"'{w}" not in not_tested
            and QUALIFIER_CHECKS.get(claim["check"]) != w]


def _claim_problems(claim: dict[str, Any], figures: FigureLabels | None) -> list[str]:
    check = claim["check"]
    if check not in CHECKS:
        return [f"check: unknown check {check!r}; allowed checks: {', '.join(sorted(CHECKS))}"]
    required, optional = check_parameters(check)
    given = set(claim) - CLAIM_FIELDS
    problems = kind_problems(claim)
    problems += [f"{key!r} is not a parameter of check {check!r}; allowed: "
                f"{', '.join(sorted(required | optional | CLAIM_FIELDS))}" for key in sorted(given - required - optional)]
    problems += [f"check {check!r} needs {key!r}" for key in sorted(required - given)]
    if figures is not None:
        unknown = sorted(set(claim.get("figures", [])) - set(figures))
        problems += [f"figures: unknown figure {f!r}; figures of this paper: {', '.join(sorted(figures))}" for f in unknown]
    for key, what in (("undecided_at", "the reason the claim cannot be decided there"),
                      ("departs", "how its check departs there from the paper's sentence")):
        by_scale = claim.get(key, {})
        if not isinstance(by_scale, dict) or not all(
                scale in SCALES and isinstance(why, str) and why.strip() for scale, why in by_scale.items()):
            problems.append(f"{key}: a mapping of scales ({', '.join(SCALES)}) to {what}, got {by_scale!r}")
    problems += [f"{key}: a line of text, got {claim[key]!r}" for key in ("not_tested", "section")
                 if key in claim and not (isinstance(claim[key], str) and claim[key].strip())]
    if claim.get("require") == "fraction" and "fraction" in optional and claim.get("fraction") is None:
        problems.append("require: 'fraction' needs a 'fraction' (the share of cells that must hold)")
    if claim.get("fraction") is not None and claim.get("require") != "fraction":
        problems.append("fraction: read only with require: fraction")
    low, high = claim.get("low"), claim.get("high")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) and low > high:
        problems.append(f"low: {low} is above high: {high} (a band no value can fall in)")
    # what the claim's tables hold: column -> values, over its figures (read as one table)
    tables = [figures[f] for f in claim.get("figures", []) if f in figures] if figures is not None else []
    columns: dict[str, set] = {}
    for table in tables:
        for column, values in table.items():
            columns.setdefault(column, set()).update(values)
    hints = check_hints(check)
    for key in sorted(given & set(hints)):
        value, hint = claim[key], hints[key]
        if not _conforms(value, hint):
            problems.append(f"{key}: {value!r} is not {_describe(hint)}")
        elif value is not None:
            problems += [f"{key}: {p}" for marker in _markers(hint)
                         for p in _marker_problems(marker, value, claim, columns, tables)]
    return problems


def _marker_problems(marker: Any, value: Any, claim: dict[str, Any], columns: dict[str, set],
                     tables: list) -> list[str]:
    """What is wrong with `value` by what the marker says it holds (nothing for names when the claim
    reads no figure: then there is nothing to name)."""
    if isinstance(marker, Above):
        items = value if isinstance(value, list) else [value]
        low = ">= " if marker.inclusive else "> "
        return [f"{v!r} is not {low + str(marker.low) if marker.high is None else f'in ({marker.low}, {marker.high}]'}"
                for v in items if not ((v >= marker.low if marker.inclusive else v > marker.low)
                                       and (marker.high is None or v <= marker.high))]
    if isinstance(marker, OneOf):
        items = value if isinstance(value, list) else [value]
        allowed = ", ".join([*marker.names, *([marker.shown] if marker.shown else [])])
        return [f"{v!r} is not allowed; allowed values: {allowed}" for v in items
                if v not in marker.names and not (marker.pattern and re.fullmatch(marker.pattern, v))]
    if not isinstance(marker, Names) or not tables:
        return []
    figures = ", ".join(claim.get("figures", []))
    if marker.what == "selector":
        return [p for column, wanted in value.items() for p in _name_problems(column, wanted, columns, figures)]
    if marker.what in ("columns", "column"):
        return [p for column in (value if marker.what == "columns" else [value])
                for p in _name_problems(column, [], columns, figures)]
    if marker.what == "values":
        column = claim.get(marker.of)
        return _name_problems(column, value, columns, figures) if column in columns else []
    if marker.what == "target" and isinstance(value, str):
        return _name_problems(value, [], columns, figures)
    if marker.what == "target" and isinstance(value, dict):
        return _name_problems("panel", list(value), columns, figures)
    return []


def _name_problems(column: str, values: Any, columns: dict[str, set], figures: str) -> list[str]:
    """A column of the claim's tables, then each of `values` (one or a list) a value it takes."""
    if column not in columns:
        return [f"{column!r} is not a column of figures {figures}; allowed: {', '.join(sorted(columns))}"]
    known = columns[column]
    return [f"{column} {v!r} is not in figures {figures}; allowed values: {_listed(known)}"
            for v in (values if isinstance(values, list) else [values]) if not _member(v, known)]


def _member(value: Any, known: set) -> bool:
    try:
        return value in known
    except TypeError:  # an unhashable value (a mapping where a name belongs)
        return False


def _listed(values: Collection[Any]) -> str:
    shown = sorted(map(str, values))
    return ", ".join(shown[:SHOWN]) + (f", ... ({len(shown)} in all)" if len(shown) > SHOWN else "")


# --- types, from the checks' annotations -------------------------------------------------------------

def _markers(hint: Any) -> list[Any]:
    """The metadata of every Annotated in a hint, through unions (`Fraction | None`) and lists (`list[McStat]`:
    a OneOf then applies to each item)."""
    if typing.get_origin(hint) is Annotated:
        return list(hint.__metadata__) + _markers(typing.get_args(hint)[0])
    if typing.get_origin(hint) in (Union, types.UnionType, list):
        return [m for arg in typing.get_args(hint) for m in _markers(arg)]
    return []


def _conforms(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return _conforms(value, args[0])
    if hint is Any:
        return True
    if origin is Literal:
        return value in args
    if origin in (Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint in (float, int):  # YAML's 1e-4 (no dot) is a string, true is no number, and .nan / .inf no value
        return (isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
                and math.isfinite(value))
    if hint in (bool, str):
        return isinstance(value, hint)
    if (origin or hint) in (list, tuple, collections.abc.Sequence):
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value) if args else isinstance(value, list)
    if (origin or hint) is dict:
        return isinstance(value, dict) and all(_conforms(k, args[0]) and _conforms(v, args[1])
                                               for k, v in value.items()) if args else isinstance(value, dict)
    return True  # a type these checks do not use: not checked


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return _describe(args[0])
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if (origin or hint) in (list, tuple, collections.abc.Sequence):
        return f"a list of {_describe(args[0]).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    if (origin or hint) is dict:
        return "a mapping"
    return {float: "a number", int: "an integer", bool: "true or false", str: "a string",
            type(None): "null"}.get(hint, str(hint))
