"""Version matrix selection."""

from __future__ import annotations

import subprocess
from pathlib import Path

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


def _kueue_tree(root: Path, module: str = "sigs.k8s.io/kueue", api: str = "v0.36.2") -> Path:
    """A source tree shaped as a Kueue checkout: its go.mod and a Go file."""
    (root / "cmd" / "kueue").mkdir(parents=True)
    (root / "go.mod").write_text(
        f"module {module}\n\ngo 1.25\n\nrequire (\n\tk8s.io/api {api}\n)\n"
    )
    (root / "cmd" / "kueue" / "main.go").write_text("package main\n\nfunc main() {}\n")
    return root


def test_a_kueue_source_tree_brings_its_kubernetes_and_is_named_by_its_hash(tmp_path, monkeypatch):
    monkeypatch.delenv("MKDC_KUEUE_VERSION", raising=False)
    monkeypatch.delenv("MKDC_KUBERNETES_VERSION", raising=False)
    tree = _kueue_tree(tmp_path / "kueue", api="v0.36.4")
    v = versions.select(source=str(tree))
    assert v.source is not None and v.source.path == str(tree.resolve())
    # driven as the default release, on its Kubernetes: the same minor, a patch behind
    assert (v.kueue, v.kubernetes, v.source.kubernetes) == ("0.19.2", "1.36.2", "1.36.4")
    newer = _kueue_tree(tmp_path / "newer", api="v0.37.1")
    assert versions.select(source=str(newer)).kubernetes == "1.37.1"  # a minor it has not
    assert v.kueue_label == f"source tree {v.source.tree} ({tree.resolve()})"
    monkeypatch.setenv("MKDC_KUEUE_SOURCE", str(tree))
    assert versions.select().source == v.source
    assert versions.select(kubernetes="1.36.2").kubernetes == "1.36.2"


def test_the_tree_hash_follows_what_the_binary_is_built_from(tmp_path):
    tree = _kueue_tree(tmp_path / "kueue")
    before = versions.source_tree_hash(tree)
    (tree / "cmd" / "kueue" / "main_test.go").write_text("package main\n")
    (tree / "docs").mkdir()
    (tree / "docs" / "x.go").write_text("package docs\n")
    (tree / "README.md").write_text("changed\n")
    assert versions.source_tree_hash(tree) == before
    (tree / "cmd" / "kueue" / "main.go").write_text("package main\n\nfunc main() { panic(1) }\n")
    edited = versions.source_tree_hash(tree)
    assert edited != before
    # a vendored tree is built from vendor/: its listing of modules counts
    (tree / "vendor").mkdir()
    (tree / "vendor" / "modules.txt").write_text("# example.com/dep v1.0.0\n")
    assert versions.source_tree_hash(tree) != edited


def test_a_git_tree_is_named_by_git_describe_and_driven_as_its_release(tmp_path, monkeypatch):
    monkeypatch.delenv("MKDC_KUEUE_VERSION", raising=False)
    tree = _kueue_tree(tmp_path / "kueue", api="v0.35.4")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    subprocess.run([*git, "tag", "v0.17.9"], check=True)
    v = versions.select(source=str(tree))
    assert v.source is not None and v.source.describe == "v0.17.9"
    assert (v.kueue, v.kubernetes) == ("0.17.1", "1.35.4")
    assert "kueue source v0.17.9" in v.describe()


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: root.mkdir(), "has no go.mod"),
        (lambda root: _kueue_tree(root, module="example.com/other"), "not sigs.k8s.io/kueue"),
        (lambda root: _kueue_tree(root, api="v1.0.0"), "requires no k8s.io/api"),
    ],
)
def test_a_tree_that_is_not_kueue_is_one_line(tmp_path, make, says):
    make(tmp_path / "tree")
    with pytest.raises(UserError, match=says) as raised:
        versions.select(source=str(tmp_path / "tree"))
    assert "\n" not in str(raised.value)


def test_a_tree_inside_another_repository_is_named_by_its_hash(tmp_path):
    subprocess.run(["git", "-C", str(tmp_path), "init", "-q"], check=True)
    tree = _kueue_tree(tmp_path / "copy")
    source = versions.select(source=str(tree)).source
    assert source is not None and source.describe == f"tree {source.tree}"


def test_doctor_names_the_build_of_a_source_tree_as_the_fix(tmp_path, monkeypatch, capsys):
    from harness import cli

    monkeypatch.setenv("MKDC_CACHE_DIR", str(tmp_path / "cache"))
    tree = _kueue_tree(tmp_path / "kueue")
    cli.main(["doctor", "--kueue-source", str(tree)])
    out = capsys.readouterr().out
    source = versions.select(source=str(tree)).source
    assert source is not None
    assert f"kueue-src-{source.tree}" in out
    assert f"missing (fix: mkdc bins --kueue-source {tree.resolve()})" in out
