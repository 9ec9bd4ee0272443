"""Kubeconfig files given on the command line, checked before any connection.

The kubernetes client reports a broken kubeconfig as a Python error about its own code
(`list indices must be integers`), as a log line (a missing exec plugin), as a warning
(a server URL without a scheme), or not at all (a context naming a user that is not
there). So the harness reads the file itself first: the context it will use, that
context's cluster and user, the server URL and the files they name.
"""

from __future__ import annotations

import base64
import binascii
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.errors import UserError, shown, shown_path
from harness.userfiles import file_problem, parse_yaml, read_text

MAX_BYTES = 4 * 1024 * 1024  # many clusters with their certificates: still far below
FILE_FIELDS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}
DATA_FIELDS = {
    "cluster": ("certificate-authority-data",),
    "user": ("client-certificate-data", "client-key-data"),
}


def check(path: Path, context: str | None) -> str:
    """The server URL of the context the harness will use (`context`, else the file's
    current-context); UserError `kubeconfig PATH: problem` when the file cannot do."""
    label = f"kubeconfig {shown_path(path)}"
    doc = parse_yaml(read_text(path, label, MAX_BYTES), label)
    if doc is None:
        raise UserError(f"{label}: is empty, not a kubeconfig")
    if not isinstance(doc, dict):
        raise UserError(
            f"{label}: is not a kubeconfig (a mapping with clusters, users and contexts),"
            f" got {type(doc).__name__}"
        )
    kc = _Kubeconfig(doc, label, path.parent)
    name = context or doc.get("current-context")
    if not name:
        raise UserError(
            f"{label}: has no current-context; name one as --cluster NAME=KUBECONFIG:CONTEXT"
            f" (contexts: {kc.names('contexts')})"
        )
    if not isinstance(name, str):
        raise UserError(f"{label}: current-context must be a context name, got {shown(name)}")
    ctx = kc.entry("contexts", "context", name, None)
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    cluster = kc.entry("clusters", "cluster", cluster_name, f"context {shown(name)}")
    assert isinstance(cluster_name, str)  # entry() said so
    if user_name is not None:
        user = kc.entry("users", "user", user_name, f"context {shown(name)}")
        kc.files("user", user_name, user)
        kc.exec_plugin(user_name, user)
    kc.files("cluster", cluster_name, cluster)
    return kc.server(cluster_name, cluster)


class _Kubeconfig:
    """One parsed file; each method raises the UserError for the first problem it sees."""

    def __init__(self, doc: dict[str, Any], label: str, base: Path) -> None:
        self.doc, self.label, self.base = doc, label, base

    def fail(self, problem: str) -> UserError:
        return UserError(f"{self.label}: {problem}")

    def entries(self, section: str) -> list[dict[str, Any]]:
        items = self.doc.get(section) or []
        if not isinstance(items, list):
            raise self.fail(f"{section} must be a list, got {type(items).__name__}")
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise self.fail(f"{section}[{i}] must be a mapping with a name")
        return items

    def names(self, section: str) -> str:
        names = [shown(item["name"]) for item in self.entries(section)]
        return ", ".join(names[:10]) + (", ..." if names[10:] else "") or "none"

    def entry(self, section: str, key: str, name: Any, owner: str | None) -> dict[str, Any]:
        """The `key` mapping of the entry `name` in `section`, which `owner` names."""
        if not isinstance(name, str) or not name:
            raise self.fail(f"{owner} names no {key}")
        for item in self.entries(section):
            if item["name"] == name:
                body = item.get(key)
                if not isinstance(body, dict):
                    raise self.fail(f"{key} {shown(name)} has no {key} mapping")
                return body
        known = f"({section}: {self.names(section)})"
        if owner is None:
            raise self.fail(f"has no {key} {shown(name)} {known}")
        raise self.fail(f"{owner} names {key} {shown(name)}, which is not in the file {known}")

    def files(self, kind: str, name: str, body: dict[str, Any]) -> None:
        for field in FILE_FIELDS[kind]:
            value = body.get(field)
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise self.fail(f"{kind} {shown(name)}: {field} must be a file name")
            target = Path(value) if Path(value).is_absolute() else self.base / value
            problem = file_problem(target)
            if problem:
                raise self.fail(f"{kind} {shown(name)}: {field} {shown_path(value)}: {problem}")
        for field in DATA_FIELDS[kind]:
            value = body.get(field)
            if value is None:
                continue
            try:
                base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                raise self.fail(f"{kind} {shown(name)}: {field} is not base64") from None

    def exec_plugin(self, name: str, user: dict[str, Any]) -> None:
        plugin = user.get("exec")
        if plugin is None:
            return
        command = plugin.get("command") if isinstance(plugin, dict) else None
        if not isinstance(command, str) or not command:
            raise self.fail(f"user {shown(name)}: exec needs a command")
        if "\0" in command or not shutil.which(command):
            raise self.fail(
                f"user {shown(name)}: exec command {shown(command)} not found on PATH"
                " (install the credential plugin this kubeconfig uses)"
            )

    def server(self, name: str, cluster: dict[str, Any]) -> str:
        server = cluster.get("server")
        bad = f"cluster {shown(name)}: server {shown(server)} is not a URL like https://HOST:PORT"
        if not isinstance(server, str) or not server.isprintable() or " " in server:
            raise self.fail(bad)
        try:
            url = urlsplit(server)
            port = url.port  # ValueError when out of range or not a number
        except ValueError:
            raise self.fail(bad) from None
        if url.scheme not in ("http", "https") or not url.hostname or port == 0:
            raise self.fail(bad)
        return server
