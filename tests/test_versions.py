"""Version matrix selection."""

from __future__ import annotations

import pytest

from harness.cluster import versions
from harness.errors import UserError


def test_default_is_newest_kueue_on_its_kubernetes(monkeypatch):
    monkeypatch.delenv("MKDC_KUEUE_VERSION", raising=False)
    monkeypatch.delenv("MKDC_KUBERNETES_VERSION", raising=False)
    v = versions.select()
    assert (v.kueue, v.kubernetes) == ("0.19.2", "1.36.2")


def test_second_matrix_point_by_flag_or_env(monkeypatch):
    assert versions.select("v0.17.1").kubernetes.startswith("1.35.")
    monkeypatch.setenv("MKDC_KUEUE_VERSION", "0.17.1")
    assert versions.select().kueue == "0.17.1"


def test_kubernetes_override_and_errors():
    assert versions.select("0.19.2", "v1.36.1").kubernetes == "1.36.1"
    with pytest.raises(UserError, match="not in the version matrix"):
        versions.select("0.99.0")
    with pytest.raises(UserError, match="full version"):
        versions.select("0.19.2", "1.36")
