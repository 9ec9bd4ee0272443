"""The kind node image built here, for machines that reach no image registry.

A kind node image is a Debian rootfs (debootstrap from the distribution's mirror) with
systemd, containerd and runc from Debian, kind's own base files (shipped in the kind Go
module), the kubelet, kubeadm and kubectl built from the Kubernetes module, and the
control plane's images (kind_images.py) already in containerd's store. It is cached in
the local Docker engine under a tag keyed by its recipe, so a second run builds nothing.
`prepare` gathers it with everything else a built kind environment takes from here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster import gomodules, toolchain
from harness.cluster.versions import Versions
from harness.errors import UserError
from harness.providers import kind_images
from harness.providers.kind_images import (
    LOCAL_REPO,
    Image,
    Layer,
    Progress,
    binary_image,
    binary_layer,
    docker_has,
    images_dir,
    keyed_image,
    kueue_image,
    kwok_image,
    linked_libraries,
    node_binaries,
    node_binary_path,
    offline_manifests,
    run_tool,
    write_archive,
)

SUITE, MIRROR = "bookworm", "http://deb.debian.org/debian"
NODE_PACKAGES = (
    "systemd systemd-sysv dbus conntrack iptables nftables iproute2 ethtool util-linux mount"
    " kmod libseccomp2 pigz bash ca-certificates curl jq procps containerd runc"
    " containernetworking-plugins"
).split()


PAUSE_REF = "registry.k8s.io/pause:3.10"  # the sandbox image in kind's containerd config


def can_build_rootfs() -> bool:
    return shutil.which("debootstrap") is not None and os.geteuid() == 0


def debian_rootfs(progress: Progress) -> Path:
    """A tarball of a Debian rootfs with the node's packages (debootstrap, cached)."""
    key = hashlib.sha256(" ".join([SUITE, MIRROR, *NODE_PACKAGES]).encode()).hexdigest()[:12]
    tarball = images_dir() / f"rootfs-{SUITE}-{key}.tar"
    if tarball.is_file():
        return tarball
    if not can_build_rootfs():
        if not shutil.which("debootstrap"):
            raise UserError(
                "debootstrap is needed to build the kind node image here:"
                " sudo scripts/setup --for test (or apt-get install debootstrap)"
            )
        raise UserError("building the kind node image here needs root (debootstrap, chroot)")
    images_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=images_dir(), prefix="rootfs-") as tmp:
        root = Path(tmp) / "root"
        progress(f"node image: debootstrap {SUITE} from {MIRROR} (about 2 minutes)")
        started = time.monotonic()
        run_tool(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(NODE_PACKAGES)}",
                SUITE,
                str(root),
                MIRROR,
            ],
            "debootstrap",
        )
        for junk in (
            "var/cache/apt/archives",
            "usr/share/doc",
            "usr/share/man",
            "var/lib/apt/lists",
        ):
            shutil.rmtree(root / junk, ignore_errors=True)
        partial = tarball.with_name(tarball.name + ".partial")
        run_tool(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], "tar")
        partial.rename(tarball)
        progress(f"node image: rootfs ready in {time.monotonic() - started:.0f}s")
    return tarball


def pause_binary(v: Versions) -> Path:
    """Kubernetes' own pause.c (in its module), compiled static with the machine's cc."""
    target = images_dir() / f"pause-v{v.kubernetes}"
    if target.is_file():
        return target
    source = (
        gomodules.module_dir("k8s.io/kubernetes", f"v{v.kubernetes}") / "build/pause/linux/pause.c"
    )
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise UserError(
            "a C compiler (cc) is needed to build the pause binary: apt-get install gcc"
        )
    images_dir().mkdir(parents=True, exist_ok=True)
    run_tool(
        [cc, "-Os", "-static", "-DVERSION=mkdc", "-o", str(target), str(source)], "compiling pause"
    )
    return target


def control_plane_images(v: Versions, rootfs_dir: Path) -> list[Image]:
    """The images kubeadm runs as static pods and add-ons, under the names it expects.

    kube-proxy programs iptables, so its image also holds iptables (nft backend) from
    the node's rootfs with the libraries and extensions it loads.
    """
    images = []
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        binary = toolchain.binary_path(v, name)
        ref = f"registry.k8s.io/{name}:v{v.kubernetes}"
        images.append(
            binary_image(ref, {f"/usr/local/bin/{name}": binary}, [f"/usr/local/bin/{name}"])
        )
    etcd = toolchain.binary_path(v, "etcd")
    images.append(binary_image(etcd_ref(v), {"/usr/local/bin/etcd": etcd}, ["/usr/local/bin/etcd"]))
    pause = Layer()
    pause.add("/pause", pause_binary(v), 0o755)
    images.append(_cached(PAUSE_REF, pause, ["/pause"], v))
    images.append(_kube_proxy_image(v, rootfs_dir))
    coredns = node_binary_path(v, "coredns")
    images.append(binary_image(coredns_ref(v), {"/coredns": coredns}, ["/coredns"]))
    return images


def etcd_ref(v: Versions) -> str:
    """Our etcd under its own version; kubeadm is told to use this tag (imageTag)."""
    return f"registry.k8s.io/etcd:{v.etcd}-0"


def coredns_ref(v: Versions) -> str:
    """Where kubeadm looks for CoreDNS when told its tag (dns.imageTag)."""
    return f"registry.k8s.io/coredns/coredns:v{v.coredns}"


def _cached(ref: str, layer: Layer, entrypoint: list[str], v: Versions) -> Image:
    key = hashlib.sha256(f"{kind_images.RECIPE}{ref}{v.describe()}".encode()).hexdigest()[:12]
    return keyed_image(ref, key, lambda archive: write_archive(archive, ref, layer, entrypoint))


def _kube_proxy_image(v: Versions, rootfs_dir: Path) -> Image:
    layer = binary_layer({"/usr/local/bin/kube-proxy": node_binary_path(v, "kube-proxy")})
    multi = "usr/sbin/xtables-nft-multi"
    layer.add(multi, rootfs_dir / multi, 0o755)
    _add_libraries(layer, rootfs_dir / multi, rootfs_dir)
    # the match and target extensions iptables-restore loads, and what they link
    # (libxt_statistic, which spreads a Service over two endpoints, needs libm)
    extensions = rootfs_dir / "usr/lib/x86_64-linux-gnu/xtables"
    for ext in sorted(extensions.glob("*.so")):
        layer.add(str(ext.relative_to(rootfs_dir)), ext, 0o644)
        _add_libraries(layer, ext, rootfs_dir)
    for tool in (
        "iptables",
        "iptables-save",
        "iptables-restore",
        "ip6tables",
        "ip6tables-save",
        "ip6tables-restore",
    ):
        layer.links[f"usr/sbin/{tool}"] = "xtables-nft-multi"
    return _cached(
        f"registry.k8s.io/kube-proxy:v{v.kubernetes}", layer, ["/usr/local/bin/kube-proxy"], v
    )


def _add_libraries(layer: Layer, path: Path, rootfs_dir: Path) -> None:
    """The shared libraries `path` (a file of the rootfs) loads, from the rootfs."""
    for lib in linked_libraries(Path("/") / path.relative_to(rootfs_dir), root=rootfs_dir):
        real = Path(os.path.realpath(rootfs_dir / lib.lstrip("/")))
        if not real.is_relative_to(rootfs_dir):  # an absolute link inside the rootfs
            real = rootfs_dir / os.path.realpath(lib).lstrip("/")
        layer.add(lib, real, 0o755)


BRIDGE_CNI: dict[str, Any] = {
    # One node per cluster: a static bridge over the node's pod range is all a pod needs
    # (kindnetd, kind's default, is not in reach here). Masquerade lets pods reach the
    # other clusters' apiservers on the kind network.
    "cniVersion": "1.0.0",
    "name": "mkdc-bridge",
    "plugins": [
        {
            "type": "bridge",
            "bridge": "cni0",
            "isGateway": True,
            "ipMasq": True,
            "hairpinMode": True,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": "10.244.0.0/24"}]],
                "routes": [{"dst": "0.0.0.0/0"}],
            },
        },
        {"type": "portmap", "capabilities": {"portMappings": True}},
        {"type": "loopback"},
    ],
}
# kind applies this after kubeadm init; without a provisioner image, only the class
STORAGE = """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
"""
NODE_ENTRYPOINT = '["/usr/local/bin/entrypoint", "/sbin/init"]'
IMPORT_SCRIPT = """set -e
nohup containerd >/dev/null 2>&1 &
for i in $(seq 30); do ctr version >/dev/null 2>&1 && break; sleep 1; done
for archive in /kind/images/*.tar; do
  ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
    --all-platforms --no-unpack --digests "$archive" >/dev/null
done
hook='{"path": "/kind/bin/mount-product-files.sh"}'
ctr oci spec \
  | jq ".hooks.createContainer[.hooks.createContainer|length] |= . + $hook" \
  | jq 'del(.process.rlimits)' >/etc/containerd/cri-base.json
ctr --namespace=k8s.io images list -q
pkill containerd
while pgrep -x containerd >/dev/null; do sleep 0.2; done
rm -rf /kind/images
"""


def node_tag(v: Versions) -> str:
    recipe = [
        kind_images.RECIPE,
        v.describe(),
        f"coredns v{v.coredns}",
        *NODE_PACKAGES,
        IMPORT_SCRIPT,
        STORAGE,
        json.dumps(BRIDGE_CNI),
    ]
    key = hashlib.sha256("\0".join(recipe).encode())
    return f"{LOCAL_REPO}/kind-node:v{v.kubernetes}-{key.hexdigest()[:12]}"


def node_image(v: Versions, progress: Progress) -> str:
    """The kind node image for `v`, built here once (a few minutes) and then reused."""
    tag = node_tag(v)
    if docker_has(tag):
        progress(f"node image {tag}: cached")
        return tag
    started = time.monotonic()
    binaries = node_binaries(v, progress)
    rootfs = debian_rootfs(progress)
    with tempfile.TemporaryDirectory(dir=images_dir(), prefix="node-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        run_tool(
            ["tar", "-C", str(root), "--numeric-owner", "-xf", str(rootfs)], "unpacking the rootfs"
        )
        progress("node image: control-plane images")
        images = control_plane_images(v, root)
        _lay_out_node(root, v, binaries, images)
        stage = f"{tag}-stage"
        progress("node image: importing into docker")
        stream = (
            f"set -o pipefail; tar -C {shlex.quote(str(root))} --numeric-owner -c . | docker import"
            f" --change 'ENV container=docker' - {stage}"
        )
        run_tool(["bash", "-c", stream], "docker import")
    name = "mkdc-node-build-" + hashlib.sha256(tag.encode()).hexdigest()[:8]
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
    try:
        run_tool(
            [
                "docker",
                "run",
                "-d",
                "--privileged",
                "--name",
                name,
                "--entrypoint",
                "sleep",
                stage,
                "infinity",
            ],
            "docker run",
        )
        progress("node image: loading the control-plane images into containerd")
        run_tool(["docker", "exec", name, "bash", "-c", IMPORT_SCRIPT], "loading images")
        run_tool(
            [
                "docker",
                "commit",
                "--change",
                f"ENTRYPOINT {NODE_ENTRYPOINT}",
                "--change",
                "CMD []",
                name,
                tag,
            ],
            "docker commit",
        )
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", name], capture_output=True, check=False)
        subprocess.run(["docker", "rmi", stage], capture_output=True, check=False)
    progress(f"node image {tag}: built in {time.monotonic() - started:.0f}s")
    listed = subprocess.run(
        [
            "docker",
            "image",
            "ls",
            "--format",
            "{{.Repository}}:{{.Tag}}",
            f"{LOCAL_REPO}/kind-node",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    for old in superseded_node_images(v, tag, listed.stdout.split()):
        progress(f"node image {old}: superseded by this build, removed")
        subprocess.run(["docker", "rmi", old], capture_output=True, check=False)
    return tag


def superseded_node_images(v: Versions, current: str, listed: list[str]) -> list[str]:
    """Node images of this Kubernetes version built by an earlier recipe (about 1.5 GB
    each, never used again); those of other versions stay for `--kubernetes-version`."""
    prefix = f"{LOCAL_REPO}/kind-node:v{v.kubernetes}-"
    return [ref for ref in listed if ref.startswith(prefix) and ref != current]


def _kind_base_files(v: Versions) -> Path:
    return gomodules.module_dir("sigs.k8s.io/kind", f"v{v.kind}") / "images/base/files"


def _lay_out_node(
    root: Path, v: Versions, binaries: Mapping[str, Path], images: list[Image]
) -> None:
    """What kind's base Dockerfile and `kind build node-image` put in a node, offline."""
    base = _kind_base_files(v)
    for source in base.rglob("*"):
        if source.is_file() and not source.is_relative_to(base / "LICENSES"):
            rel = source.relative_to(base)
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
            executable = rel.parts[0] == "usr" or rel.parts[:2] == ("kind", "bin")
            dest.chmod(0o755 if executable else 0o644)
    # A container may not lower its oom_score_adj without CAP_SYS_RESOURCE, which some
    # VMs' init drops; containerd then clamps pods to its own value instead of failing.
    containerd = root / "etc/containerd/config.toml"
    containerd.write_text(
        containerd.read_text().replace(
            "restrict_oom_score_adj = false", "restrict_oom_score_adj = true"
        )
    )
    for name in ("kubelet", "kubeadm", "kubectl"):
        shutil.copyfile(binaries[name], root / "usr/bin" / name)
        (root / "usr/bin" / name).chmod(0o755)
    links = {
        "usr/local/bin/containerd": "/usr/bin/containerd",  # kind's unit starts it there
        "opt/cni/bin": "/usr/lib/cni",
    }
    for link, target in links.items():
        path = root / link
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to(target)
    (root / "etc/cni/net.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/cni/net.d/10-mkdc-bridge.conflist").write_text(json.dumps(BRIDGE_CNI, indent=2))
    (root / "kind/manifests").mkdir(parents=True, exist_ok=True)
    (root / "kind/manifests/default-storage.yaml").write_text(STORAGE)
    (root / "kind/version").write_text(f"v{v.kubernetes}")
    (root / "kind/images").mkdir(parents=True, exist_ok=True)
    for image in images:
        shutil.copyfile(image.archive, root / "kind/images" / image.archive.name)
    (root / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    systemd = root / "lib/systemd/system"
    for wants in ("multi-user.target.wants", "local-fs.target.wants", "basic.target.wants"):
        for entry in (systemd / wants).glob("*"):
            entry.unlink()
    for entry in (root / "etc/systemd/system").glob("*.wants/*"):
        entry.unlink()
    for pattern in (
        "sockets.target.wants/*udev*",
        "sockets.target.wants/*initctl*",
        "sysinit.target.wants/systemd-tmpfiles-setup.service",
    ):
        for entry in systemd.glob(pattern):
            entry.unlink()
    with (root / "etc/systemd/journald.conf").open("a") as journald:
        journald.write("ReadKMsg=no\n")
    run_tool(
        [
            "chroot",
            str(root),
            "systemctl",
            "enable",
            "kubelet.service",
            "containerd.service",
            "undo-mount-hacks.service",
        ],
        "systemctl enable",
    )
    run_tool(["chroot", str(root), "systemctl", "mask", "systemd-binfmt.service"], "systemctl mask")


@dataclass(frozen=True)
class Built:
    """Everything a kind environment takes from this machine instead of a registry."""

    node_image: str
    kueue_manifest: Path
    kwok_manifest: Path
    images: tuple[Path, ...]  # archives loaded into every cluster
    worker_images: tuple[Path, ...]  # and into each worker


def prepare(v: Versions, work: Path, progress: Progress) -> Built:
    """Build (or find cached) the node image and Kueue's and KWOK's images, and render
    their manifests into `work`."""
    node = node_image(v, progress)
    kueue_manifest, kwok_manifest = offline_manifests(v, work)
    return Built(
        node_image=node,
        kueue_manifest=kueue_manifest,
        kwok_manifest=kwok_manifest,
        images=(kueue_image(v).archive,),
        worker_images=(kwok_image(v).archive,),
    )
