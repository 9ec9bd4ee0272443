"""A failed local bring-up keeps its processes' logs: the run directory goes (it holds
keys), and the error must not name files inside it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cluster import upstream, versions
from harness.errors import UserError
from harness.providers import local
from harness.providers.local import LocalProvider, keep_logs


def test_keep_logs_copies_the_logs_into_a_private_directory(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "etcd.log").write_text("etcdserver: request timed out\n")
    (tmp_path / "sa.key").write_text("secret")
    kept = keep_logs(tmp_path)
    try:
        assert kept is not None and kept.stat().st_mode & 0o777 == 0o700
        assert [p.name for p in kept.iterdir()] == ["etcd.log"]  # logs only, never keys
        assert "request timed out" in (kept / "etcd.log").read_text()
    finally:
        shutil.rmtree(kept or tmp_path / "none", ignore_errors=True)


def test_keep_logs_keeps_nothing_without_logs(tmp_path: Path) -> None:
    assert keep_logs(tmp_path) is None
    assert keep_logs(None) is None


def test_a_component_that_dies_at_start_leaves_its_log_where_the_error_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    etcd = tmp_path / "etcd"
    etcd.write_text("#!/bin/sh\necho 'etcd: cannot listen' >&2\nexit 3\n")
    etcd.chmod(0o755)
    monkeypatch.setattr(LocalProvider, "_binaries", lambda _self: {"etcd": etcd})
    # a Kueue tree without a feature table: no gate known, none set
    monkeypatch.setattr(upstream, "manifests", lambda _v: SimpleNamespace(kueue_dir=tmp_path))
    monkeypatch.setattr(local.kueue_install, "write_mode_supported", lambda *_a: None)
    provider = LocalProvider(versions.select(), workers=1, write_mode="merge-patch")
    with pytest.raises(UserError) as caught:
        provider.up()
    message = str(caught.value)
    assert provider.run_dir is not None and not provider.run_dir.exists()
    found = re.search(r"read (\S+/etcd\.log)", message)
    assert found, message
    kept = Path(found.group(1))
    try:
        assert kept.parent.name.startswith("mkdc-failed-up-")
        assert "cannot listen" in kept.read_text()
    finally:
        shutil.rmtree(kept.parent)


def test_a_provider_and_its_twin_look_their_inputs_up_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`twin()` checks the inputs before a second environment is announced; neither bring-up
    looks them up again."""
    looked_up: list[str] = []

    def binaries(_self: LocalProvider) -> dict[str, Path]:
        looked_up.append("binaries")
        return {}

    monkeypatch.setattr(LocalProvider, "_binaries", binaries)
    monkeypatch.setattr(upstream, "manifests", lambda _v: object())
    monkeypatch.setattr(local.kueue_install, "write_mode_supported", lambda *_a: None)
    provider = LocalProvider(versions.select(), workers=1, write_mode="merge-patch")
    twin = provider.twin()
    assert provider.check() == twin.check() == ({}, provider.check()[1], "merge-patch")
    assert looked_up == ["binaries"]
