"""Redaction: everything a report writes passes through here, because reports get
published and a message or timeline detail could carry a kubeconfig fragment by accident."""

from __future__ import annotations

import datetime as dt
import enum
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
_PEM_RE = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.DOTALL)
_SECRET_KEYS = (
    "client-key-data",
    "client-certificate-data",
    "token",
    "password",
    "client-key",
    "private-key",
)
_SECRET_KV_RE = re.compile(
    r"""(["']?)(?<![A-Za-z0-9])(client-key-data|client-certificate-data|token|password)\1"""
    r"""(\s*[:=]\s*)(?!\[REDACTED\])"""  # idempotent: redacting twice changes nothing
    r"""("[^"]*"|'[^']*'|[^\s,;}\]]+)""",
    re.IGNORECASE,
)
_BEARER_RE = re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def redact(text: str) -> str:
    """Blank out anything that looks like key material: PEM blocks, keys, tokens."""
    text = _PEM_RE.sub("[REDACTED PEM block]", text)
    text = _SECRET_KV_RE.sub(lambda m: f"{m[1]}{m[2]}{m[1]}{m[3]}{REDACTED}", text)
    return _BEARER_RE.sub(rf"\1 {REDACTED}", text)


# What no XML 1.0 document can hold (C0 controls but tab, newline and return; U+FFFE,
# U+FFFF), and what no UTF-8 file can: lone surrogates, as from a file name or log line
# decoded with surrogateescape.
_UNWRITABLE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def writable(text: str) -> str:
    """`text` with what a report file cannot hold replaced by U+FFFD, so a message copied
    from a log never makes junit.xml malformed or report.html unwritable."""
    return _UNWRITABLE_RE.sub("\ufffd", text)


def report_text(text: str) -> str:
    """Text as every report file writes it: redacted, and writable."""
    return writable(redact(text))


def plain(value: Any) -> Any:
    """YAML-safe plain data with every string redacted and writable (and secret-named
    keys blanked)."""
    if isinstance(value, str):
        return report_text(value)
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        return iso(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, val in value.items():
            name = str(key)
            secret = name.lower() in _SECRET_KEYS and val not in (None, "")
            out[report_text(name)] = REDACTED if secret else plain(val)
        return out
    if isinstance(value, bytes | bytearray):
        return report_text(bytes(value).decode("utf-8", errors="replace"))
    if isinstance(value, set | frozenset):
        return [plain(v) for v in sorted(value, key=str)]
    if isinstance(value, Iterable):
        return [plain(v) for v in value]
    return report_text(str(value))


def iso(when: dt.datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""
