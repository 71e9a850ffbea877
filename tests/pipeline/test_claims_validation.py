"""Claims validation reads what a check's parameters name from their annotations: every check marks its
selectors and columns, so that a new check cannot silently skip the start-up checks."""

import math
import re

import pytest

from fedrepro.claims.checks import CHECKS, check_hints
from fedrepro.claims.checks.common import Names
from fedrepro.claims.validation import _markers, unweighed_qualifiers, validate_claims
from fedrepro.errors import ConfigError

MARKED = {"a": "selector", "b": "selector", "select": "selector", "reference": "selector", "per": "columns",
          "show": "columns", "along": "column", "group": "column"}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_parameters_that_name_figure_contents_are_marked(check):
    for param, hint in check_hints(check).items():
        if param in MARKED:
            assert Names(MARKED[param]) in _markers(hint), f"{check}: {param} is not marked {MARKED[param]}"


def test_types_come_from_the_annotations():
    claim = {"id": "T1", "check": "series_ratio", "a": {}, "b": {}, "per": [], "window": [10, 100.0]}
    validate_claims({"claims": [claim]}, "t.yaml")
    for bad, message in [({"window": [10, "x"]}, "window: [10, 'x'] is not a list of numbers"),
                         ({"series": "variance"}, "series: 'variance' is not one of var, mean_err"),
                         ({"max_ratio": True}, "max_ratio: True is not a number"),
                         ({"max_ratio": -1}, "max_ratio: -1 is not > 0")]:
        with pytest.raises(ConfigError, match=re.escape(f"t.yaml: claim T1: {message}") + "$"):
            validate_claims({"claims": [{**claim, **bad}]}, "t.yaml")


@pytest.mark.parametrize("key,value,says", [("low", math.nan, "low"), ("high", math.inf, "high"),
                                            ("rel_tol", math.nan, "rel_tol"), ("rel_tol", -1.0, ">= 0"),
                                            ("low", 2.0, "low: 2.0 is above high: 1.0")])
def test_a_claims_number_is_finite_and_a_tolerance_never_negative(key, value, says):
    """A NaN bound read as a bound made the check blame the code ("breaks what it states by construction"): such a
    claims file stops at start-up, naming the claim and the key."""
    claim = ({"id": "C9", "check": "rate_within", "select": {}, "rate": "r", "target": "t", "rel_tol": 0.1}
             if key == "rel_tol" else
             {"id": "C9", "check": "mc_stat_within", "select": {}, "stat": "rel_err_final", "low": 0.0, "high": 1.0})
    with pytest.raises(ConfigError, match=rf"C9.*{says}"):
        validate_claims({"claims": [claim | {key: value}]}, "c.yaml")
    validate_claims({"claims": [claim]}, "c.yaml")


def test_a_qualifier_in_the_papers_words_is_weighed_or_owned_up_to():
    """"converges much faster" checked as "faster" said more than the check showed: a paper claim whose quote has a
    word of degree rests on a `quantified` reading of it, names it in not_tested, or has that word's own check."""
    readings = {"margin": {"source": "quantified"}, "step": {"source": "unreported"}}
    claim = {"id": "C1", "check": "rate_within", "select": {}, "rate": "r", "target": "t", "rel_tol": 0.1,
             "quote": "A converges much faster than B", "rests_on": ["step"]}
    with pytest.raises(ConfigError, match="C1: quote says 'much'"):
        validate_claims({"claims": [claim]}, "c.yaml", readings=readings)
    for weighed in ({"rests_on": ["step", "margin"]}, {"not_tested": "'much': no margin declared"},
                    {"kind": "derived"}):
        validate_claims({"claims": [claim | weighed]}, "c.yaml", readings=readings)
    slight = {"id": "C2", "check": "slight", "quote": "x is slightly faster"}
    # the check that is the word's own test needs no reading
    assert unweighed_qualifiers(slight, readings) == []
    assert unweighed_qualifiers(slight | {"check": "ordered"}, readings) == ["slightly"]
