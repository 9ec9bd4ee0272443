"""Images built here from Go binaries, for machines that reach no image registry.

Every image around a Go binary (kube-apiserver, etcd, Kueue, KWOK, a dispatcher) holds
that binary and the C library it links, nothing else: one layer, written as an archive in
`docker save` form, cached per version under ~/.cache/mkdc/images like the binaries, so a
second run builds nothing. Kueue's and KWOK's install manifests are rendered from their
modules to use these images. The kind node image that carries the control plane's is in
kind_node.py; the tools (kind, Docker, ctr) run through `run_tool`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster import builds, gomodules, toolchain, upstream
from harness.cluster.versions import Versions
from harness.errors import UserError

Progress = Callable[[str], None]

# Bump when anything below changes what an image holds: cached images are keyed by it.
RECIPE = "3"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LOCAL_REPO = "mkdc.local"  # images that exist only here; never pulled (IfNotPresent)
NONROOT = "65532:65532"  # distroless's nonroot user, which Kueue's released image runs as


def images_dir() -> Path:
    return toolchain.cache_dir() / "images"


def run_tool(argv: list[str], what: str, **kwargs: object) -> str:
    """argv's output; a UserError of one line, with the tail of what it said, when it
    fails or cannot run at all."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    except OSError as exc:
        raise UserError(f"{what} failed: {argv[0]} cannot run ({exc.strerror})") from None
    if proc.returncode != 0:
        tail = "; ".join((proc.stderr or proc.stdout).strip().splitlines()[-2:])
        raise UserError(f"{what} failed (`{' '.join(argv[:4])}`): {tail}")
    return str(proc.stdout)


# ------------------------------------------------------------ image archives


@dataclass
class Layer:
    """Files of one image layer: path in the image -> bytes, a host file, or a link."""

    files: dict[str, bytes | Path] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)

    def add(self, dest: str, source: bytes | Path, mode: int | None = None) -> None:
        self.files[dest.lstrip("/")] = source
        if mode is not None:
            self.modes[dest.lstrip("/")] = mode

    def write(self, out: tarfile.TarFile) -> None:
        dirs: set[str] = set()
        for name in sorted({*self.files, *self.links}):
            for parent in reversed(Path(name).parents[:-1]):
                if str(parent) not in dirs:
                    dirs.add(str(parent))
                    info = tarfile.TarInfo(str(parent))
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    out.addfile(info)
            if name in self.links:
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, self.links[name]
                out.addfile(info)
                continue
            source = self.files[name]
            data = source if isinstance(source, bytes) else source.read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            default = 0o644 if isinstance(source, bytes) else source.stat().st_mode & 0o777
            info.mode = self.modes.get(name, default)
            out.addfile(info, io.BytesIO(data))


def write_archive(
    path: Path,
    ref: str,
    layer: Layer,
    entrypoint: list[str],
    env: Iterable[str] = (PATH_ENV,),
    user: str = "",
) -> Path:
    """An image archive in `docker save` form (what `ctr import`, `docker load` and
    `kind load image-archive` read), with one layer and no registry involved."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as layer_tar:
        layer.write(layer_tar)
    layer_bytes = raw.getvalue()
    diff_id = hashlib.sha256(layer_bytes).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": list(env), "Entrypoint": entrypoint, "WorkingDir": "/", "User": user},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created_by": "mkdc", "comment": "built from Go module binaries"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [ref], "Layers": [f"{diff_id}/layer.tar"]}]
    partial = path.with_name(path.name + ".partial")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as out:
        for name, data in (
            (f"{diff_id}/layer.tar", layer_bytes),
            (config_name, config_bytes),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    partial.rename(path)
    return path


ARCHIVE_KEY = re.compile(r"[0-9a-f]{12}\.tar")


def _archive_prefix(ref: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", ref) + "-"


def keyed_image(ref: str, key: str, write: Callable[[Path], object]) -> Image:
    """The image's archive cached under ``key`` (what went into it), written by ``write``
    when missing; a new one removes the archives of the same reference under other keys
    (an earlier recipe or earlier binaries: never loaded again, up to 100 MB each)."""
    archive = images_dir() / f"{_archive_prefix(ref)}{key}.tar"
    if not archive.is_file():
        write(archive)
        for old in superseded_archives(ref, archive, archive.parent.iterdir()):
            with contextlib.suppress(OSError):
                old.unlink()
    return Image(ref, archive)


def superseded_archives(ref: str, archive: Path, present: Iterable[Path]) -> list[Path]:
    """The archives among ``present`` of ``ref`` under another key than ``archive``'s;
    other references (and other versions) stay."""
    prefix = _archive_prefix(ref)
    return sorted(
        p
        for p in present
        if p != archive
        and p.name.startswith(prefix)
        and ARCHIVE_KEY.fullmatch(p.name[len(prefix) :]) is not None
    )


def linked_libraries(binary: Path, root: Path | None = None) -> list[str]:
    """Absolute paths of the shared libraries `binary` loads (ldd, in `root` if given)."""
    argv = ["ldd", str(binary)] if root is None else ["chroot", str(root), "ldd", str(binary)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if "not a dynamic executable" in proc.stdout + proc.stderr:
        return []
    if proc.returncode != 0:
        raise UserError(f"cannot list the libraries of {binary}: {proc.stderr.strip()}")
    return re.findall(r"(?:=>\s+|^\s+)(/\S+)\s+\(", proc.stdout, re.M)


def binary_layer(binaries: Mapping[str, Path]) -> Layer:
    """Each Go binary at its path in the image, plus the C library it links."""
    layer = Layer()
    for dest, source in binaries.items():
        layer.add(dest, source, 0o755)
        for lib in linked_libraries(source):
            layer.add(lib, Path(os.path.realpath(lib)), 0o755)
    return layer


@dataclass(frozen=True)
class Image:
    """An image built here: its reference and its cached archive."""

    ref: str
    archive: Path


def binary_image(
    ref: str, binaries: Mapping[str, Path], entrypoint: list[str], user: str = ""
) -> Image:
    """A cached image around Go binaries, keyed by their content and the recipe."""
    digest = hashlib.sha256(RECIPE.encode() + ref.encode() + user.encode())
    for dest, source in sorted(binaries.items()):
        digest.update(dest.encode() + str(source.stat().st_mtime_ns).encode())
        digest.update(str(source.stat().st_size).encode())
    return keyed_image(
        ref,
        digest.hexdigest()[:12],
        lambda archive: write_archive(archive, ref, binary_layer(binaries), entrypoint, user=user),
    )


# ------------------------------------------------- Kueue's and KWOK's images


def kueue_image(v: Versions) -> Image:
    kueue = toolchain.binary_path(v, "kueue")
    # Kueue's Deployment says runAsNonRoot: the image names a user, as Kueue's own does
    tag = f"v{v.kueue}" if v.source is None else f"src-{v.source.tree}"
    ref = f"{LOCAL_REPO}/kueue:{tag}"
    return binary_image(ref, {"/manager": kueue}, ["/manager"], user=NONROOT)


def kwok_image(v: Versions) -> Image:
    kwok = toolchain.binary_path(v, "kwok")
    binaries = {"/usr/local/bin/kwok": kwok}
    return binary_image(f"{LOCAL_REPO}/kwok:v{v.kwok}", binaries, ["/usr/local/bin/kwok"])


def node_binaries(v: Versions, progress: Progress) -> dict[str, Path]:
    """kubelet, kubeadm, kubectl, kube-proxy and kind (built once, then cached)."""
    node, kind, coredns = toolchain.node_components(v)
    folders = builds.build_many([[node], [kind, coredns]], progress)
    return {name: folders[c.key] / name for c in (node, kind, coredns) for name in c.binaries}


def node_binary_path(v: Versions, name: str) -> Path:
    for component in toolchain.node_components(v):
        if name in component.binaries:
            return toolchain.bin_dir(component) / name
    raise KeyError(name)


def docker_has(tag: str) -> bool:
    """Whether the local Docker engine has the image `tag` (nothing is ever pulled)."""
    docker = shutil.which("docker") or "docker"
    proc = subprocess.run(
        [docker, "image", "inspect", "--format", "{{.Id}}", tag],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0


def _kustomize(
    kubectl: Path, overlay: Path, source: Path, base: str, extra: dict[str, object]
) -> str:
    """`kubectl kustomize` of an upstream folder (copied: kustomize loads nothing outside
    its root) with our image names and pull policy."""
    shutil.copytree(source, overlay / "upstream", dirs_exist_ok=True)
    for folder in (overlay / "upstream").rglob("*"):
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    kustomization = {"resources": [f"upstream/{base}"], **extra}
    (overlay / "kustomization.yaml").write_text(json.dumps(kustomization))
    return run_tool([str(kubectl), "kustomize", str(overlay)], f"kustomize {source.name}")


PULL_IF_NOT_PRESENT = json.dumps(
    [
        {
            "op": "replace",
            "path": "/spec/template/spec/containers/0/imagePullPolicy",
            "value": "IfNotPresent",
        }
    ]
)


def _render(
    kubectl: Path, overlay: Path, source: Path, base: str, upstream: str, ours: Image
) -> str:
    """An upstream kustomization with `upstream` (its image name) replaced by ours."""
    name, tag = ours.ref.rsplit(":", 1)
    extra: dict[str, object] = {
        "images": [{"name": upstream, "newName": name, "newTag": tag}],
        "patches": [{"target": {"kind": "Deployment"}, "patch": PULL_IF_NOT_PRESENT}],
    }
    return _kustomize(kubectl, overlay, source, base, extra)


def offline_manifests(v: Versions, work: Path) -> tuple[Path, Path]:
    """Kueue's and KWOK's install manifests, rendered from their modules (as their
    releases are) with the images built here; returns (kueue.yaml, kwok.yaml)."""
    kubectl = node_binary_path(v, "kubectl")
    kueue_dir = upstream.kueue_dir(v)
    kwok_dir = gomodules.module_dir("sigs.k8s.io/kwok", f"v{v.kwok}")
    kueue = _render(
        kubectl,
        work / "kueue-manifests",
        kueue_dir / "config",
        "default",
        "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue",
        kueue_image(v),
    )
    kwok = _render(
        kubectl,
        work / "kwok-manifests",
        kwok_dir / "kustomize",
        "kwok",
        "registry.k8s.io/kwok/kwok",
        kwok_image(v),
    )
    paths = work / "kueue.yaml", work / "kwok.yaml"
    paths[0].write_text(kueue)
    paths[1].write_text(kwok)
    return paths
