"""GitHub Actions expressions (`${{ ... }}` and `if:`) as the emulated runner needs them:
string, number and boolean literals, context values (`env.X`, `inputs.X`,
`steps.ID.outputs.X`, `runner.os`, ...), `==`, `!=`, `!`, `&&`, `||`, parentheses and
the functions the caller gives (`always()`, `hashFiles(...)`). A value is looked up by
the caller; an unknown name or function is an error, never an empty string."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

TEMPLATE = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
    r"|(?P<num>\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][\w.\-]*))"
)
_OPS = {"==": "==", "!=": "!=", "&&": " and ", "||": " or ", "!": " not ", "(": "(", ")": ")"}
_OPS[","] = ","


def evaluate(
    expr: str, lookup: Callable[[str], Any], functions: Mapping[str, Callable[..., Any]]
) -> Any:
    """The value of `expr`: `lookup(name)` for a context value, `functions[name](...)` for
    a call."""
    source: list[str] = []
    names: dict[str, Any] = {}
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot read expression {expr!r} at {expr[pos:]!r}")
        pos = m.end()
        if m.group("str") is not None:
            source.append(repr(m.group("str")[1:-1].replace("''", "'")))
        elif m.group("op") is not None:
            source.append(_OPS[m.group("op")])
        elif m.group("num") is not None:
            source.append(m.group("num"))
        else:
            name = m.group("name")
            if name in ("true", "false", "null"):
                source.append({"true": "True", "false": "False", "null": "None"}[name])
            elif expr[pos:].lstrip().startswith("("):
                if name not in functions:
                    raise ValueError(f"function not supported here: {name}()")
                key = f"_f{len(names)}"
                names[key] = functions[name]
                source.append(key)
            else:
                key = f"_v{len(names)}"
                names[key] = lookup(name)
                source.append(key)
    return eval("".join(source), {"__builtins__": {}}, names)  # noqa: S307 (built here)


def text(value: Any) -> str:
    """A value as GitHub puts it in a string: booleans lowercase, null empty."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def truthy(value: Any) -> bool:
    """An `if:` result: GitHub's falsy values are false, 0, '' and null."""
    return value not in (False, 0, "", None)


def expand(template: str, lookup: Callable[[str], Any], functions: Mapping[str, Any]) -> str:
    return TEMPLATE.sub(lambda m: text(evaluate(m.group(1), lookup, functions)), template)
