"""Objects a dispatcher needs before it starts: read from a profile, rendered per cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cluster.environment import Cluster, Environment
from harness.profile import objects

PRICES: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "prices"},
    "data": {"prices.json": '{"gpu": 2.5}', "owner": "{dispatcher_name}"},
}
PER_CLUSTER: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "{cluster|trimSuffix:-cluster}-token", "namespace": "{namespace}"},
    "stringData": {"cluster": "{cluster}"},
}


def env(tmp_path: Path, *workers: str) -> Environment:
    def cluster(name: str, role: str) -> Cluster:
        return Cluster(name, tmp_path / name, role)

    return Environment(
        provider="local",
        run_dir=tmp_path,
        manager=cluster("manager", "manager"),
        workers=[cluster(w, "worker") for w in workers],
        kubernetes_version="v1.36.3",
        kueue_version="v0.19.2",
        dispatcher_name="x/y",
    )


def test_a_file_of_several_documents_and_an_inline_one(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "b.yaml").write_text(
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: b}\n---\n"
    )
    (tmp_path / "deploy" / "a.yml").write_text(
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n---\n"
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a2}\n"
    )
    (tmp_path / "deploy" / "notes.txt").write_text("not yaml: [")
    names = [d["metadata"]["name"] for d in objects.documents("deploy", tmp_path)]
    assert names == ["a", "a2", "b"]
    assert objects.documents(PRICES, tmp_path) == [PRICES]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("missing.yaml", "missing.yaml: no such file or folder"),
        (7, "must be a manifest (a mapping) or a path to YAML"),
        ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "document 1: has no apiVersion"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "ConfigMap has no metadata.name"),
        (
            {**PRICES, "data": {"x": "{pod}"}},
            "ConfigMap prices: unknown placeholder {pod}",
        ),
    ],
)
def test_what_is_wrong_is_said(tmp_path: Path, entry: object, problem: str) -> None:
    with pytest.raises(ValueError) as raised:
        objects.documents(entry, tmp_path)
    assert problem in str(raised.value)


def test_broken_yaml_is_said(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("kind: [")
    with pytest.raises(ValueError, match="bad.yaml: not YAML"):
        objects.documents("bad.yaml", tmp_path)


def test_rendered_once_or_per_worker(tmp_path: Path) -> None:
    wanted = objects.Objects(manager=(PRICES, PER_CLUSTER), workers=(PRICES,))
    made = [
        (cluster.name, doc["metadata"]["name"], doc.get("stringData", doc.get("data")))
        for cluster, doc in objects.rendered(
            wanted, env(tmp_path, "east-cluster", "west"), "kueue-system", "x/y"
        )
    ]
    assert made == [
        ("manager", "prices", {"prices.json": '{"gpu": 2.5}', "owner": "x/y"}),
        ("manager", "east-token", {"cluster": "east-cluster"}),
        ("manager", "west-token", {"cluster": "west"}),
        ("east-cluster", "prices", {"prices.json": '{"gpu": 2.5}', "owner": "x/y"}),
        ("west", "prices", {"prices.json": '{"gpu": 2.5}', "owner": "x/y"}),
    ]
    assert PER_CLUSTER["metadata"]["name"] == "{cluster|trimSuffix:-cluster}-token"  # unchanged
