"""How the throw-away build modules pin their dependencies."""

from dataclasses import replace
from pathlib import Path

import pytest

from harness.cluster import gomodules, toolchain, upstream, versions
from harness.errors import UserError

# what `go list -deps -f MODULE_OF_EACH_PACKAGE` prints: a line per package, the
# standard library's empty, a folder replacement without a version
LISTING = """
k8s.io/api v0.36.2
k8s.io/api v0.36.2
golang.org/x/net v0.56.0

sigs.k8s.io/kueue v0.19.2
example.com/local
sigs.k8s.io/kwok v0.8.0
"""


def test_each_listed_module_is_required_once_except_the_skipped() -> None:
    lines = gomodules.shared_requires(LISTING, skip=("sigs.k8s.io/kwok", "sigs.k8s.io/kueue"))
    assert lines == ["\tgolang.org/x/net v0.56.0", "\tk8s.io/api v0.36.2"]


def test_another_builds_versions_are_required_never_replaced() -> None:
    """Go's build cache keys a package by its module's required version: a `replace` to
    the same code would miss the packages Kueue's build compiled."""
    kwok = next(c for c in toolchain.components(versions.select()) if c.name == "kwok")
    shared = gomodules.shared_requires(LISTING, skip=(kwok.module, "sigs.k8s.io/kueue"))
    gomod, tools = gomodules.build_module_text(kwok, [], shared)
    assert (
        f"require (\n\tsigs.k8s.io/kwok {kwok.version}\n"
        "\tgolang.org/x/net v0.56.0\n\tk8s.io/api v0.36.2\n)" in gomod
    )
    assert "replace" not in gomod
    assert tools.count('\t_ "') == 1 and '_ "sigs.k8s.io/kwok/cmd/kwok"' in tools


def test_kubernetes_keeps_its_staging_modules_beside_the_shared_versions(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text(
        "module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n"
        "\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n)\n"
    )
    staging = gomodules.staging_modules(tmp_path)
    assert staging == ["k8s.io/api", "k8s.io/client-go"]
    assert gomodules.staging_replaces(staging, "v1.36.2") == [
        "\tk8s.io/api => k8s.io/api v0.36.2",
        "\tk8s.io/client-go => k8s.io/client-go v0.36.2",
    ]
    shared = gomodules.shared_requires(LISTING, skip=("k8s.io/kubernetes", *staging))
    assert shared == [
        "\tgolang.org/x/net v0.56.0",
        "\tsigs.k8s.io/kueue v0.19.2",
        "\tsigs.k8s.io/kwok v0.8.0",
    ]


def test_kubernetes_and_kwok_are_built_against_kueue_which_keeps_its_own() -> None:
    """Kueue and etcd keep their releases' own dependency versions; the others' binaries
    are cached under a key naming the build they were built against, so a new Kueue
    version builds them again. On Kueue v0.17 every component keeps its own."""
    built = {c.name: c for c in toolchain.components(versions.select())}
    assert {n for n, c in built.items() if c.built_against} == {"kwok", "kubernetes"}
    kwok, kueue, kubernetes = built["kwok"], built["kueue"], built["kubernetes"]
    assert kwok.built_against == kueue == kubernetes.built_against
    assert kwok.key == f"kwok-{kwok.version}+kueue-{kueue.version}"
    assert kueue.key == f"kueue-{kueue.version}"
    node = {c.name: c for c in toolchain.node_components(versions.select())}["kubernetes-node"]
    assert node.built_against == kueue
    older = toolchain.components(versions.select(kueue="v0.17.1"))
    assert all(c.built_against is None for c in older)


def test_the_makefiles_go_commands_compile_as_mkdc_bins_does() -> None:
    """`go vet` and `go test` of the Go example find its dependencies in Go's build cache
    only when their compile flags are the upstream builds' (the cache key includes them);
    otherwise a fresh machine's first `make test` compiles them all again."""
    makefile = (Path(__file__).parent.parent / "Makefile").read_text()
    line = next(x for x in makefile.splitlines() if x.startswith("GO_BUILD_FLAGS :="))
    assert tuple(line.split(":=", 1)[1].split()) == toolchain.COMPILE_FLAGS


def _source(tmp_path: Path) -> versions.Versions:
    tree = tmp_path / "kueue"
    tree.mkdir()
    return replace(
        versions.select("0.19.2"),
        source=versions.KueueSource(str(tree), "0123456789ab", "v0.19.2-3-gabc", "1.36.2"),
    )


def test_a_source_trees_kueue_is_built_in_the_tree_and_the_rest_as_its_release(
    tmp_path: Path,
) -> None:
    v = _source(tmp_path)
    by_name = {c.name: c for c in toolchain.components(v)}
    kueue = by_name["kueue"]
    assert kueue.source == tmp_path / "kueue" and kueue.key == "kueue-src-0123456789ab"
    # Go's defaults: the tree's vendor/ when it has one, its go.mod never rewritten
    assert "-mod" not in kueue.goflags
    assert any("GitVersion=v0.19.2-3-gabc" in f for f in kueue.ldflags)
    # the control plane is the release's build, cached once whatever the tree
    released = {c.name: c for c in toolchain.components(versions.select("0.19.2"))}
    assert by_name["kubernetes"].key == released["kubernetes"].key
    assert by_name["kwok"].key == released["kwok"].key


def test_a_source_tree_whose_workloads_are_not_the_api_mkdc_drives_is_refused(
    tmp_path: Path,
) -> None:
    v = _source(tmp_path)
    crds = tmp_path / "kueue" / "config/components/crd/bases"
    crds.mkdir(parents=True)
    crd = crds / "kueue.x-k8s.io_workloads.yaml"
    crd.write_text("spec:\n  versions:\n  - name: v1beta1\n    served: true\n")
    with pytest.raises(UserError, match="serves Workloads as v1beta1, not kueue.x-k8s.io/v1beta2"):
        upstream.manifests(v)
    crd.write_text("spec:\n  versions:\n  - name: v1beta2\n    served: true\n")
    (tmp_path / "kueue" / "go.mod").write_text("module sigs.k8s.io/kueue\n")
    with pytest.raises(UserError, match="does not require"):  # past the API: its go.mod
        upstream.manifests(v)
