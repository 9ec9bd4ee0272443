"""The emulated runner's expressions, as GitHub evaluates them."""

from __future__ import annotations

import pytest

from tests import workflow_expressions as expressions

VALUES = {"inputs.cache": "true", "steps.restore.outputs.cache-hit": "", "env.X": "it's"}
FUNCTIONS = {"always": lambda: True, "success": lambda: False}


def value(expr: str) -> object:
    return expressions.evaluate(expr, VALUES.__getitem__, FUNCTIONS)


def test_comparisons_and_logic() -> None:
    assert value("inputs.cache == 'true' && steps.restore.outputs.cache-hit != 'true'") is True
    assert value("always() && !success()") is True
    assert value("success() || inputs.cache == 'false'") is False
    assert value("env.X == 'it''s'") is True
    assert expressions.text(value("inputs.cache == 'true'")) == "true"


def test_templates_expand_and_unknowns_are_errors() -> None:
    assert (
        expressions.expand("a-${{ inputs.cache }}-b", VALUES.__getitem__, FUNCTIONS) == "a-true-b"
    )
    with pytest.raises(KeyError):
        value("inputs.nope")
    with pytest.raises(ValueError, match="not supported"):
        value("hashFiles('x')")
