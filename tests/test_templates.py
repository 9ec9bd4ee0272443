"""Names derived from a cluster's name by rule (workerKubeconfigSecret and the like)."""

from __future__ import annotations

import pytest

from harness import templates
from harness.cluster import multikueue


@pytest.mark.parametrize(
    ("template", "cluster", "expected"),
    [
        ("{cluster}-kubeconfig", "east", "east-kubeconfig"),
        ("{cluster|trimSuffix:-cluster}-kubeconfig", "east-cluster", "east-kubeconfig"),
        ("{cluster|trimSuffix:-cluster}-kubeconfig", "gpu-reserved", "gpu-reserved-kubeconfig"),
        ("kc-{cluster|trimPrefix:gpu-}", "gpu-west", "kc-west"),
        ("{cluster|replace:-:.}", "a-b-c", "a.b.c"),
        ("{cluster|replace:-cluster:}-kc", "east-cluster", "east-kc"),
        ("{cluster|upper|lower}", "East", "east"),
        ("{ cluster }", "x", "x"),
    ],
)
def test_rendered(template: str, cluster: str, expected: str) -> None:
    assert templates.render(template, {"cluster": cluster}) == expected
    assert multikueue.worker_secret_name(cluster, template) == expected


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{worker}-kc", "unknown placeholder {worker} (known: {cluster})"),
        ("{cluster|chop}", "unknown filter 'chop'"),
        ("{cluster|trimSuffix}", "filter 'trimSuffix' takes 1 argument(s): trimSuffix:TEXT"),
        ("{cluster|replace:a}", "takes 2 argument(s): replace:TEXT:TEXT"),
        ("{cluster|upper:x}", "takes 0 argument(s)"),
    ],
)
def test_problems_are_said(template: str, problem: str) -> None:
    said = templates.problem(template, {"cluster"})
    assert said is not None and problem in said
    assert templates.problem("{cluster}", {"cluster"}) is None


def test_names() -> None:
    assert templates.names("{cluster|upper}-{namespace}") == {"cluster", "namespace"}
