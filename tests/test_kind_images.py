"""Images built without a registry: archive layout, library closure, node layout keys."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from harness.cluster import versions
from harness.providers import kind_images, kind_node
from harness.providers.kind_images import Layer

V = versions.select("0.19.2")


def read_archive(path: Path) -> tuple[dict, dict, dict[str, tarfile.TarInfo], bytes]:
    with tarfile.open(path) as archive:

        def member(name: str) -> bytes:
            f = archive.extractfile(name)
            assert f is not None, name
            return f.read()

        manifest = json.loads(member("manifest.json"))[0]
        config = json.loads(member(manifest["Config"]))
        layer_bytes = member(manifest["Layers"][0])
    with tarfile.open(fileobj=io.BytesIO(layer_bytes)) as layer:
        members = {m.name: m for m in layer.getmembers()}
    return manifest, config, members, layer_bytes


def test_an_archive_is_what_docker_save_writes_with_one_layer(tmp_path):
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF not really")
    binary.chmod(0o755)
    layer = Layer()
    layer.add("/usr/local/bin/tool", binary, 0o755)
    layer.add("/etc/tool.conf", b"key: value\n")
    layer.links["usr/bin/tool"] = "../local/bin/tool"
    path = kind_images.write_archive(
        tmp_path / "tool.tar", "mkdc.local/tool:v1", layer, ["/usr/local/bin/tool"], user="65532"
    )
    manifest, config, members, layer_bytes = read_archive(path)
    assert manifest["RepoTags"] == ["mkdc.local/tool:v1"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"]
    assert config["config"]["Entrypoint"] == ["/usr/local/bin/tool"]
    assert config["config"]["User"] == "65532"
    assert kind_images.PATH_ENV in config["config"]["Env"]
    assert members["usr/local/bin/tool"].mode == 0o755
    assert members["etc/tool.conf"].mode == 0o644
    assert (
        members["usr/bin/tool"].issym() and members["usr/bin/tool"].linkname == "../local/bin/tool"
    )
    for parent in ("usr", "usr/local", "usr/local/bin", "etc"):  # parents come first
        assert members[parent].isdir()
    names = list(members)
    assert names.index("usr/local") < names.index("usr/local/bin/tool")
    assert not path.with_name("tool.tar.partial").exists()


@pytest.mark.skipif(not shutil.which("ldd"), reason="ldd is not on this machine")
def test_a_dynamic_binary_brings_its_c_library():
    libraries = kind_images.linked_libraries(Path("/bin/sh"))
    assert any("libc.so" in lib for lib in libraries)
    assert all(lib.startswith("/") for lib in libraries)


def test_a_static_binary_brings_nothing(tmp_path):
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    assert kind_images.linked_libraries(script) == []


def test_the_node_tag_follows_the_versions_and_the_recipe(monkeypatch):
    tag = kind_node.node_tag(V)
    assert tag.startswith("mkdc.local/kind-node:v1.36.2-")
    assert kind_node.node_tag(versions.select("0.17.1")) != tag
    monkeypatch.setattr(kind_images, "RECIPE", kind_images.RECIPE + "x")
    assert kind_node.node_tag(V) != tag


def test_the_bridge_is_a_single_node_pod_network_that_masquerades():
    bridge = kind_node.BRIDGE_CNI["plugins"][0]
    assert bridge["type"] == "bridge" and bridge["ipMasq"] is True
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.0.0/24"}]]  # kind's first node range
    assert {p["type"] for p in kind_node.BRIDGE_CNI["plugins"]} == {
        "bridge",
        "portmap",
        "loopback",
    }


def test_a_new_node_image_supersedes_only_its_own_versions_earlier_builds():
    repo = f"{kind_images.LOCAL_REPO}/kind-node"
    current = kind_node.node_tag(V)
    listed = [
        current,
        f"{repo}:v{V.kubernetes}-0123456789ab",  # an earlier recipe: removed
        f"{repo}:v1.35.4-0123456789ab",  # another version: kept
        f"{repo}:v{V.kubernetes}0-0123456789ab",  # v1.36.30, say: kept
    ]
    assert kind_node.superseded_node_images(V, current, listed) == [
        f"{repo}:v{V.kubernetes}-0123456789ab"
    ]


def test_a_new_archive_supersedes_its_references_older_keys_only(tmp_path, monkeypatch):
    names = [
        "mkdc.local_kueue_v0.19.2-0ddac4a2de80.tar",  # the same reference, older key: removed
        "mkdc.local_kueue_v0.19.1-bcdfa57b089e.tar",  # another version: kept
        "registry.k8s.io_etcd_3.6.16-0-844f615fcba7.tar",  # another reference: kept
        "mkdc.local_kueue_v0.19.2-notakey.tar",  # not one of ours: kept
        "pause-v1.36.3",
    ]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    monkeypatch.setattr(kind_images, "images_dir", lambda: tmp_path)
    ref = "mkdc.local/kueue:v0.19.2"
    image = kind_images.keyed_image(
        ref, "5e30ac8cad07", lambda a: kind_images.write_archive(a, ref, kind_images.Layer(), [])
    )
    assert image.archive == tmp_path / "mkdc.local_kueue_v0.19.2-5e30ac8cad07.tar"
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([image.archive.name, *names[1:]])
    # etcd's ref "3.6.16-0" is not the ref "3.6.16" under a key "0-..."
    etcd = "registry.k8s.io/etcd:3.6.16"
    assert kind_images.superseded_archives(etcd, tmp_path / "x", tmp_path.iterdir()) == []
