"""Each provider is a `Provider`, and has the abilities the run asks for by type: what
the run does with a provider follows from these, never from probing its attributes."""

from __future__ import annotations

from pathlib import Path

from harness.cluster import versions
from harness.providers import HandsOver, KeepsLogs, Provider, Twins
from harness.providers.existing import ExistingProvider
from harness.providers.kind import KindProvider
from harness.providers.local import LocalProvider

V = versions.select(None, None)


def test_the_local_provider_makes_a_twin_and_hands_its_environment_over() -> None:
    local = LocalProvider(V, workers=["east", "west"])
    twins: Twins = local  # what mypy holds to each protocol's members and signatures
    hands_over: HandsOver = local
    assert isinstance(twins, Twins) and isinstance(hands_over, HandsOver)
    assert not isinstance(local, KeepsLogs)  # its logs are in the run directory already


def test_kind_keeps_logs_elsewhere_and_makes_one_environment_per_run() -> None:
    kind = KindProvider(V, workers=2)
    keeps_logs: KeepsLogs = kind
    assert isinstance(keeps_logs, KeepsLogs)
    assert not isinstance(kind, Twins) and not isinstance(kind, HandsOver)


def test_existing_clusters_are_a_provider_and_no_more() -> None:
    kubeconfig = (Path("kc"), None)
    existing = ExistingProvider({"manager": kubeconfig, "w1": kubeconfig}, "mkdc.example/d")
    provider: Provider = existing
    assert isinstance(provider, Provider)
    assert not isinstance(existing, Twins | HandsOver | KeepsLogs)
