"""How the throw-away build modules pin their dependencies."""

from pathlib import Path

from harness.cluster import toolchain, versions

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


def test_each_listed_module_is_pinned_once_except_the_skipped() -> None:
    lines = toolchain.pinned_replaces(LISTING, skip=("sigs.k8s.io/kwok", "sigs.k8s.io/kueue"))
    assert lines == [
        "\tgolang.org/x/net => golang.org/x/net v0.56.0",
        "\tk8s.io/api => k8s.io/api v0.36.2",
    ]


def test_pins_go_into_the_build_modules_replace_block() -> None:
    kwok = next(c for c in toolchain.components(versions.select()) if c.name == "kwok")
    gomod, tools = toolchain.build_module_text(kwok, toolchain.pinned_replaces(LISTING))
    kueue = kwok.built_against
    assert kueue is not None
    # Kueue's module and main package beside KWOK's: Go then selects Kueue's versions
    assert (
        f"require (\n\tsigs.k8s.io/kwok {kwok.version}\n\tsigs.k8s.io/kueue {kueue.version}\n)"
        in gomod
    )
    assert "replace (\n\tgolang.org/x/net => golang.org/x/net v0.56.0\n" in gomod
    assert '_ "sigs.k8s.io/kwok/cmd/kwok"\n\t_ "sigs.k8s.io/kueue/cmd/kueue"' in tools


def test_only_kwok_is_built_against_another_components_pins() -> None:
    """Kubernetes, etcd and Kueue keep their releases' own dependency versions; KWOK's
    binaries are cached under a key naming the build it was pinned to, so a new Kueue
    version builds KWOK again."""
    built = {c.name: c for c in toolchain.components(versions.select())}
    assert {n for n, c in built.items() if c.built_against} == {"kwok"}
    kwok, kueue = built["kwok"], built["kueue"]
    assert kwok.built_against == kueue
    assert kwok.key == f"kwok-{kwok.version}+kueue-{kueue.version}"
    assert kueue.key == f"kueue-{kueue.version}"


def test_the_makefiles_go_commands_compile_as_mkdc_bins_does() -> None:
    """`go vet` and `go test` of the Go example find its dependencies in Go's build cache
    only when their compile flags are the upstream builds' (the cache key includes them);
    otherwise a fresh machine's first `make test` compiles them all again."""
    makefile = (Path(__file__).parent.parent / "Makefile").read_text()
    line = next(x for x in makefile.splitlines() if x.startswith("GO_BUILD_FLAGS :="))
    assert tuple(line.split(":=", 1)[1].split()) == toolchain.COMPILE_FLAGS
