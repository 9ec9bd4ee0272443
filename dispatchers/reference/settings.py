"""Settings of the reference dispatcher: one dataclass, from flags and an optional YAML file.

Flags override the file, the file overrides the defaults. Every value is validated here,
once, so the rest of the dispatcher never sees a bad value; each problem is reported as a
one-line ``SettingsError`` naming the setting, which the CLI prints as is.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

MODES = ("cumulative", "exclusive")
WRITE_MODES = ("admission-policy", "kueue-admission", "merge-patch")
MAX_STEP = 20  # the API maximum of .status.nominatedClusterNames
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
BUILTIN_DISPATCHERS = (
    "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "kueue.x-k8s.io/multikueue-dispatcher-incremental",
)
TIMEOUT_ANNOTATION = "mkdc.example/round-timeout"

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_QUALIFIED_NAME = re.compile(rf"({_DNS_SUBDOMAIN}/)?{_NAME}")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class SettingsError(ValueError):
    """A setting is invalid; ``field`` is its flag-style name (``round-timeout``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"  # ASCII digits only, as Go's
_PLAIN_NUMBER = re.compile(_NUMBER + r"(?:[eE][-+]?[0-9]+)?")
_DURATION_PART = re.compile(f"({_NUMBER})(ms|h|m|s)")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object) -> float:
    """Seconds from ``10s``, ``2m``, ``1m30s``, ``500ms``, ``1h`` or a plain number.

    Go's duration units, chained, as Kueue's own settings write them (the dispatcher needs
    nothing of the harness to run). Raises ValueError for anything else: None, negatives,
    unknown units.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"invalid duration {value!r}")
    text = value.strip() if isinstance(value, str) else ""
    if not isinstance(value, str):
        seconds = float(value)
    elif _PLAIN_NUMBER.fullmatch(text):
        seconds = float(text)
    else:
        parts = _DURATION_PART.findall(text)
        if not text or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"invalid duration {value!r}: e.g. 500ms, 10s, 5m, 1m30s")
        seconds = sum(float(n) * _SECONDS[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"invalid duration {value!r}")
    return seconds


@dataclass(frozen=True)
class Settings:
    """Everything the reference dispatcher can be told; defaults are safe for a test cluster."""

    round_timeout: float = 30.0  # global default round timeout, seconds
    step: int = 1  # clusters added per round
    mode: str = "cumulative"  # or "exclusive"
    tier_label: str = "mkdc.example/tier"  # label on MultiKueueCluster
    cluster_timeout_annotation: str = TIMEOUT_ANNOTATION  # on MultiKueueCluster
    config_timeout_annotation: str = TIMEOUT_ANNOTATION  # on MultiKueueConfig
    workload_timeout_annotation: str = TIMEOUT_ANNOTATION  # on Workload
    state_annotation: str = "mkdc.example/dispatch-state"  # on Workload
    dispatcher_name: str = "mkdc.example/reference-dispatcher"
    kubeconfig: str | None = None  # None: $KUBECONFIG / in-cluster
    leader_elect: bool = True
    lease_name: str = "mkdc-reference-dispatcher"
    lease_namespace: str = "kueue-system"
    lease_duration: float = 15.0
    metrics_port: int = 0  # 0 = no metrics endpoint
    log_level: str = "INFO"
    write_mode: str = "admission-policy"  # or kueue-admission, merge-patch (see writes.py)
    field_manager: str = "mkdc-reference-dispatcher"  # admission-policy and merge-patch modes
    identity: str = ""  # lease holder identity; "" = hostname_pid
    # reconciles in parallel: each waits on API round trips (its nominations; the state
    # annotation too when the status cannot imply it), not on the CPU, so under a burst
    # the round-trip time divided by this bounds the rate
    workers: int = 16
    # of those, this many take only workloads still waiting for their first nominee: under
    # a backlog of escalations on a slow apiserver every worker sat in a write while new
    # workloads waited their turn
    first_dispatch_workers: int = 4
    # escalations in flight at once: writes that add a cluster to a workload that already
    # has a copy somewhere. Each makes Kueue create one more remote copy, so under a flood
    # of pending work their rate follows how fast the manager answers instead of
    # multiplying copies until Kueue itself falls behind
    escalation_writes: int = 2
    kube_qps: float = 100.0  # client-side limit of API gets and writes, as client-go's QPS
    kube_burst: int = 200
    event_qps: float = 20.0  # Events' own limit: an explanation never takes a decision's token
    event_burst: int = 100

    @property
    def kept_for_first_dispatch(self) -> int:
        """Threads that serve only the urgent lane: as set, but one is always left for
        escalations (``--workers 2`` with the default keeps one)."""
        return min(self.first_dispatch_workers, self.workers - 1)

    def validated(self) -> Settings:
        """Return a normalised copy, or raise SettingsError for the first bad field."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, check in _CHECKS.items():
            values[name] = _run_check(name, check, values[name])
        _check_cross_fields(values)
        return Settings(**values)


def _flag(name: str) -> str:
    return name.replace("_", "-")


def _run_check(name: str, check: Callable[[Any], Any], value: Any) -> Any:
    try:
        return check(value)
    except SettingsError:
        raise
    except (TypeError, ValueError) as err:
        raise SettingsError(_flag(name), str(err)) from None


def _positive_duration(value: object) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError("must be greater than zero")
    return seconds


def _positive_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"must be a number, got {value!r}") from None
    if not number > 0 or number == float("inf"):
        raise ValueError(f"must be greater than zero, got {value!r}")
    return number


def _lease_duration(value: object) -> float:
    seconds = parse_duration(value)
    if seconds < 1:
        raise ValueError("must be at least 1s (Lease durations are whole seconds)")
    return seconds


def _int_in(low: int, high: int) -> Callable[[object], int]:
    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(f"must be an integer, got {value!r}")
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"must be an integer, got {value!r}") from None
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}, got {number}")
        return number

    return check


def _one_of(choices: Sequence[str], *, upper: bool = False) -> Callable[[object], str]:
    def check(value: object) -> str:
        text = str(value).upper() if upper else str(value)
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {value!r}")
        return text

    return check


def _matching(pattern: re.Pattern[str], what: str) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str) or not pattern.fullmatch(value) or len(value) > 253:
            raise ValueError(f"must be a {what}, got {value!r}")
        return value

    return check


def _dispatcher_name(value: object) -> str:
    name = _matching(_QUALIFIED_NAME, "qualified name like example.com/my-dispatcher")(value)
    if name in BUILTIN_DISPATCHERS:
        raise ValueError(f"{name!r} is a Kueue built-in dispatcher, not an external one")
    return name


def _kubeconfig(value: object) -> str | None:
    if value is None:
        return None
    path = os.path.expanduser(str(value))
    if not os.path.isfile(path):
        raise ValueError(f"no such file: {path}")
    return path


def _field_manager(value: object) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 128 or not value.isprintable():
        raise ValueError(f"must be 1-128 printable characters, got {value!r}")
    if value == "kueue-admission":
        raise ValueError("is Kueue's own manager; use --write-mode kueue-admission instead")
    return value


def _identity(value: object) -> str:
    if not isinstance(value, str) or len(value) > 128:
        raise ValueError(f"must be at most 128 characters, got {value!r}")
    return value


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, got {value!r}")
    return value


_KEY = _matching(_QUALIFIED_NAME, "label/annotation key like example.com/name")
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "round_timeout": _positive_duration,
    "step": _int_in(1, MAX_STEP),
    "mode": _one_of(MODES),
    "tier_label": _KEY,
    "cluster_timeout_annotation": _KEY,
    "config_timeout_annotation": _KEY,
    "workload_timeout_annotation": _KEY,
    "state_annotation": _KEY,
    "dispatcher_name": _dispatcher_name,
    "kubeconfig": _kubeconfig,
    "leader_elect": _boolean,
    "lease_name": _matching(re.compile(_DNS_SUBDOMAIN), "DNS subdomain name"),
    "lease_namespace": _matching(_DNS_LABEL, "namespace name (DNS label)"),
    "lease_duration": _lease_duration,
    "metrics_port": _int_in(0, 65535),
    "log_level": _one_of(LOG_LEVELS, upper=True),
    "write_mode": _one_of(WRITE_MODES),
    "field_manager": _field_manager,
    "identity": _identity,
    "workers": _int_in(1, 64),
    "first_dispatch_workers": _int_in(0, 63),
    "escalation_writes": _int_in(1, 64),
    "kube_qps": _positive_number,
    "kube_burst": _int_in(1, 10000),
    "event_qps": _positive_number,
    "event_burst": _int_in(1, 10000),
}


def _check_cross_fields(values: Mapping[str, Any]) -> None:
    """The state annotation must not collide with the workload timeout annotation."""
    if values["state_annotation"] == values["workload_timeout_annotation"]:
        raise SettingsError(
            "state-annotation", "must differ from workload-timeout-annotation (both on Workload)"
        )


def build_parser() -> argparse.ArgumentParser:
    """The flags; defaults are suppressed so that only flags given override the file."""
    parser = argparse.ArgumentParser(
        prog="mkdc-reference-dispatcher",
        description="Reference external MultiKueue dispatcher (mkdc).",
        argument_default=argparse.SUPPRESS,
    )
    parser.add_argument("--config", metavar="FILE", help="YAML file of settings (flag names)")
    for field in dataclasses.fields(Settings):
        if field.name == "leader_elect":
            parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction)
            continue
        parser.add_argument(
            f"--{_flag(field.name)}",
            dest=field.name,
            metavar=_flag(field.name).split("-")[-1].upper(),
            help=f"default: {field.default}",
        )
    return parser


def load_settings(argv: Sequence[str] | None = None) -> Settings:
    """Defaults, then the ``--config`` file, then flags; validated."""
    args = vars(build_parser().parse_args(argv))
    config_path = args.pop("config", None)
    values = _read_file(config_path) if config_path else {}
    values.update(args)
    return Settings(**values).validated()


def _read_file(path: str) -> dict[str, Any]:
    """Read a settings file whose keys are flag names (``round-timeout``; ``_`` also accepted)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as err:
        raise SettingsError("config", f"cannot read {path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise SettingsError("config", f"{path} is not valid YAML: {_first_line(err)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError("config", f"{path} must hold a mapping of settings")
    return {_field_name(str(key), path): value for key, value in data.items()}


def _field_name(key: str, path: str) -> str:
    name = key.replace("-", "_")
    if name not in _CHECKS:
        raise SettingsError(key, f"unknown setting in {path}")
    return name


def _first_line(err: Exception) -> str:
    return " ".join(str(err).split())
