"""What a kubelet promises a container, kept for a replica run on this host.

A Pod's process cannot read another Pod's files, see or signal other processes, or run as
root on the node unless it asks to. A replica of a dispatcher under test gets the same:
- a private, empty /tmp (and TMPDIR's folder): the run directories, with the harness's
  keys and kubeconfigs, are not there, and two replicas writing /tmp/<name> never meet;
- a PID namespace of its own: it sees its own processes only;
- an unprivileged user (the one its securityContext names, else nobody), with no
  capabilities: it cannot undo the mounts that hide the rest.
The program still reaches what it runs from (its executable, its interpreter and the
files its arguments name): those are bound back, and folders on their way that the user
could not enter are made enterable in its private view only. The host is never changed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import mountns, rundir

NOBODY = (65534, 65534)


@dataclass(frozen=True)
class Sandbox:
    """How one replica is confined; `user` None keeps the harness's own (a rootless run,
    already unprivileged on the host)."""

    user: tuple[int, int] | None
    hidden: tuple[Path, ...]  # folders that look empty: /tmp and where run directories are
    needed: tuple[Path, ...]  # host paths the program reads, bound back where hidden
    working_dir: str = "/tmp"


def hidden_roots(run_dir: Path) -> tuple[Path, ...]:
    """/tmp, the temp folder run directories are made in, and this one's parent: the
    outermost of them (a folder inside another is hidden with it)."""
    found = {Path("/tmp"), Path(tempfile.gettempdir()).resolve(), run_dir.resolve().parent}
    return tuple(sorted(p for p in found if not any(q != p and _under(p, q) for q in found)))


def user_for(run_as_user: int | None, run_as_group: int | None) -> tuple[int, int] | None:
    """The user a replica runs as: its securityContext's, else nobody; never root (a
    request for uid 0 gets nobody too). None when the harness is not root: it cannot
    switch users, and its own is not root."""
    if os.geteuid() != 0:
        return None
    uid = run_as_user if run_as_user else NOBODY[0]
    gid = run_as_group if run_as_group is not None else (uid if run_as_user else NOBODY[1])
    return uid, gid or NOBODY[1]


def needed_paths(
    argv: Sequence[str],
    env: dict[str, str],
    private: Sequence[Path] = (),
    own: Sequence[Path] = (),
) -> tuple[Path, ...]:
    """What the program reads from the host: its executable (and what it links to), every
    existing absolute path among its arguments and variables (whole, or as the value of
    `--flag=/path`), and for this interpreter (mkdc's `python`) its prefixes and the
    folders its modules come from. Nothing in a run directory (`private`, and any in the
    temp folder) is, whatever names it, but the replica's `own` files there (its
    kubeconfig): the harness's keys stay out of its view."""
    found: list[Path] = []
    for text in [*argv, *env.values()]:
        for candidate in (text, text.partition("=")[2]):
            if candidate.startswith("/") and os.path.exists(candidate):
                found += [Path(candidate), Path(os.path.realpath(candidate))]
    mine = {p.resolve() for p in own}
    found = [p for p in found if p.resolve() in mine or not _harness_own(p, private)]
    if argv and os.path.realpath(argv[0]) == os.path.realpath(sys.executable):
        found += [Path(sys.prefix), Path(sys.base_prefix)]
        found += [Path(p) for p in sys.path if p.startswith("/") and os.path.isdir(p)]
        found.append(Path(__file__).resolve().parents[2])  # the project's packages
    return tuple(dict.fromkeys(found))


def _harness_own(path: Path, private: Sequence[Path]) -> bool:
    real = path.resolve()
    return rundir.containing(real) is not None or any(_under(real, p.resolve()) for p in private)


def setup(box: Sandbox, scratch: Path, binds: Sequence[tuple[Path, str]] = ()) -> list[str]:
    """Shell commands, run as root in the replica's private mount namespace before it
    starts, that make its view: the folders on the way to what it needs enterable, its
    volumes (`binds`: source, path in the container) where it expects them, the hidden
    folders empty with what it needs (and the volumes in them) bound back in, and its
    working directory."""
    visible = [b for b in binds if not any(_under(Path(b[1]), root) for root in box.hidden)]
    commands = _enterable(box, scratch) + mountns.provide_all(visible, scratch)
    commands += _hide(box, scratch, binds)
    return [*commands, f"cd {shlex.quote(box.working_dir)}"]


def drop_privileges(box: Sandbox) -> list[str]:
    """The command prefix that runs a program as the replica's user with no capabilities."""
    setpriv = shutil.which("setpriv") or "setpriv"
    drop = ["--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]
    if box.user is None:
        return [setpriv, *drop, "--"]
    uid, gid = box.user
    return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *drop, "--"]


def give(paths: Iterable[Path], user: tuple[int, int] | None) -> None:
    """Make the replica's own files and folders (its identity, its kubeconfig, its
    emptyDirs) its user's: theirs to read, and only theirs (they keep their private mode)."""
    if user is None:
        return
    for path in paths:
        os.chown(path, *user, follow_symlinks=False)
        for folder, dirs, files in os.walk(path):
            for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.chown(entry, *user, follow_symlinks=False)


def _enterable(box: Sandbox, scratch: Path) -> list[str]:
    """A private overlay over each outermost folder the user may not enter on the way to
    what it needs, with the folders below it made enterable there (x for others)."""
    if box.user is None:
        return []
    closed: set[Path] = set()
    for path in box.needed:
        for folder in [*reversed(path.parents), *([path] if path.is_dir() else [])]:
            if not _enters(folder, box.user):
                closed.add(folder)
    commands: list[str] = []
    tops = sorted(f for f in closed if not any(_under(f, g) and f != g for g in closed))
    for i, top in enumerate(tops):
        if any(_under(h, top) for h in box.hidden) or any(_under(top, h) for h in box.hidden):
            continue  # a hidden folder is remade below; what is needed there is bound back
        commands.append(mountns.overlay(top, scratch / f"open-{i}", scratch / f"open-{i}-work"))
        inside = sorted(f for f in closed if _under(f, top))
        commands.append("chmod o+x " + " ".join(shlex.quote(str(f)) for f in inside))
    return commands


def _hide(box: Sandbox, scratch: Path, binds: Sequence[tuple[Path, str]]) -> list[str]:
    """Each hidden folder becomes an empty tmpfs with what is needed from below it bound
    back, and the volumes meant to be in it: the tmpfs is filled where it is made (a
    folder still reachable) and then moved over the hidden one, so the sources are bound
    before they disappear from view."""
    commands: list[str] = []
    moves: list[str] = []
    for i, root in enumerate(box.hidden):
        stage = scratch / f"hidden-{i}"
        stage.mkdir(mode=0o700, parents=True, exist_ok=True)
        s = shlex.quote(str(stage))
        commands.append(f"mount -t tmpfs -o mode=1777 tmpfs {s}")
        for path in sorted({p for p in box.needed if _under(p, root) and p != root}):
            if any(_under(path, q) and q != path for q in box.needed if _under(q, root)):
                continue  # inside another needed path that is bound back whole
            if path.is_symlink() or not path.exists():
                continue
            target = shlex.quote(str(stage / path.relative_to(root)))
            make = f"mkdir -p {target}" if path.is_dir() else _touch(target)
            source = shlex.quote(str(path))
            commands += [make, f"mount --rbind -o ro {source} {target}"]
        for volume, inside in binds:
            if _under(Path(inside), root):
                target = shlex.quote(str(stage / Path(inside).relative_to(root)))
                make = f"mkdir -p {target}" if volume.is_dir() else _touch(target)
                commands += [make, f"mount --bind {shlex.quote(str(volume))} {target}"]
        # -n: no record in /run/mount/utab, which libmount updates after a move and a
        # rootless replica (root only in its own user namespace) may not write
        moves.append(f"mount -n --move {s} {shlex.quote(str(root))}")
    return commands + moves


def _touch(target: str) -> str:
    return f'mkdir -p "$(dirname {target})" && : > {target}'


def _enters(folder: Path, user: tuple[int, int]) -> bool:
    """Whether `user` may search `folder` (its x bit for owner, group or others)."""
    try:
        st = folder.stat()
    except OSError:
        return True  # nothing to open: what is not there is not needed
    if st.st_uid == user[0]:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == user[1]:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
