"""Kueue's feature gates as a run had them: the defaults of the Kueue under test, read
from its own source tree (the module of the release, or the `--kueue-source` tree), with
the gates its Configuration sets on top.

Kueue declares each gate's history in `pkg/features/kube_features.go`
(`defaultVersionedFeatureGates`: a list of `{Version, Default, PreRelease}` per gate).
Its gate registry emulates Kubernetes' component version (1.x), later than every Kueue
version those lists name, so the last entry of each list is the one in force.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FEATURES_FILE = Path("pkg/features/kube_features.go")
_CONSTANT = re.compile(r"^\s*(\w+)\s+featuregate\.Feature\s*=\s*\"([^\"]+)\"", re.M)
_TABLE = re.compile(r"defaultVersionedFeatureGates\s*=\s*map\[[^\]]+\][\w.]+\{(.*?)\n\}", re.S)
_ENTRY = re.compile(r"^\t(\w+):\s*\{(.*?)^\t\},", re.S | re.M)
_DEFAULT = re.compile(r"Default:\s*(true|false)")


@functools.cache
def kueue_defaults(kueue_dir: Path) -> dict[str, bool]:
    """Every gate the Kueue in `kueue_dir` knows, with its default there, by gate name.
    Empty when the tree has no such file (a Kueue too old or laid out otherwise). Read
    once per process (the module cache is read-only). Callers must not change it."""
    path = kueue_dir / FEATURES_FILE
    if not path.is_file():
        return {}
    return parse_defaults(path.read_text())


def parse_defaults(source: str) -> dict[str, bool]:
    """The gate table of kube_features.go's text: gate name -> its latest default."""
    names = dict(_CONSTANT.findall(source))
    table = _TABLE.search(source)
    if table is None:
        return {}
    found: dict[str, bool] = {}
    for constant, specs in _ENTRY.findall(table.group(1)):
        defaults = _DEFAULT.findall(specs)
        if defaults:
            found[names.get(constant, constant)] = defaults[-1] == "true"
    return dict(sorted(found.items()))


def configured(config: Mapping[str, Any]) -> dict[str, bool]:
    """The gates a Kueue Configuration sets (its `featureGates`)."""
    return {str(k): bool(v) for k, v in (config.get("featureGates") or {}).items()}


def as_run(defaults: Mapping[str, bool], config: Mapping[str, Any]) -> dict[str, bool]:
    """Each gate's state in a Kueue started with `config`: its default unless set."""
    return dict(sorted({**defaults, **configured(config)}.items()))


def with_wanted(
    config: Mapping[str, Any], defaults: Mapping[str, bool], wanted: Mapping[str, bool]
) -> dict[str, Any]:
    """`config` (extra Kueue configuration) with each `wanted` gate set to its wanted
    state where this Kueue knows it (an unknown gate stops Kueue at start) and `config`
    leaves it unset (a gate the profile sets is its own choice, and the checks it hides
    say so)."""
    given = configured(config)
    add = {g: v for g, v in wanted.items() if g in defaults and g not in given}
    if not add:
        return dict(config)
    return {**config, "featureGates": {**given, **add}}
