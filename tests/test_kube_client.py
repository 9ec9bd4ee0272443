"""Clients made from many threads at once each get complete key and certificate files."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.cluster import kube


def test_kubeconfigs_are_loaded_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The client names a cached key file before writing it (see kube._LOADING): loads
    running side by side read empty files. Four threads load; none overlaps another."""
    inside, most = 0, 0
    count = threading.Lock()

    def load(*_: Any, **__: Any) -> None:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.05)
        with count:
            inside -= 1

    monkeypatch.setattr(kube.config, "load_kube_config", load)
    threads = [
        threading.Thread(target=kube.api_client, args=(tmp_path / "kubeconfig",)) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1
