"""Commands run in a private mount namespace, so files a process expects at fixed host paths
(Kueue's metrics certs in /etc, a Pod's service-account files) can be given to it without
touching the host."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from harness.errors import UserError

# PID 1 of a namespace of its own: runs the program as its child and exits with its
# status. It and unshare ignore SIGTERM and SIGINT (set before unshare starts, inherited):
# a signal to the whole group reaches the program directly, which gets the default
# dispositions back (`env --default-signal`), stops as it likes, and the namespace ends
# with it. Should unshare die (SIGKILL, or the harness gone: its parent-death signal),
# `--kill-child=SIGKILL` ends the namespace, and so every process in it, at once.
_INIT = (
    'env --default-signal=TERM,INT,QUIT "$@" & child=$!; '
    "while :; do wait $child; s=$?; kill -0 $child 2>/dev/null || exit $s; done"
)
_IGNORING = "trap '' TERM INT; "


def private_command(
    setup: list[str],
    argv: list[str],
    name: str,
    network: Sequence[int] | None = None,
    *,
    own_pids: bool = False,
    hostname: str | None = None,
) -> list[str]:
    """argv run after the shell commands `setup`, in a private mount namespace; with
    `network`, also in a network namespace of its own, as a Pod is: its own loopback, so
    fixed ports and several replicas never collide, and the host's 127.0.0.1 reached only
    on the `network` ports (see `own_network`); with `own_pids`, in a PID namespace of its
    own (a fresh /proc), where it sees and signals no process of the host; with
    `hostname`, under that host name (a UTS namespace), as a Pod is under its name: two
    replicas in PID namespaces of their own often have the same pid, and a leader
    election identity of host name and pid would be the same for both.

    Without `own_pids` the shell execs argv, so the process keeps the pid (and process
    group) it was started with; with it, the program is a child of the namespace's first
    process, in the same process group: signals from the supervisor reach it directly.
    """
    unshare = shutil.which("unshare")
    if not unshare:
        raise UserError("the unshare command (util-linux) is missing: apt-get install util-linux")
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    netns: list[str] = []
    if network is not None:
        setup = [*setup, *own_network(network)]
        netns = ["--net"]
    uts: list[str] = []
    if hostname is not None:
        uts = ["--uts"]
        # sethostname(2) (the hostname command, essential in Debian): in a user namespace
        # of its own the UTS namespace is its to name, but /proc/sys stays the host
        # root's file, which a rootless replica may not write
        name_it = f"hostname {shlex.quote(hostname)}"
        if not shutil.which("hostname"):
            name_it = f"echo {shlex.quote(hostname)} > /proc/sys/kernel/hostname"
        setup = [name_it, *setup]
    if own_pids:  # the first process stays, so its set-up ends before the program starts
        script = (" && ".join(setup) + " || exit $?; " if setup else "") + _INIT
    else:
        script = " && ".join([*setup, 'exec "$@"'])
    pidns = ["--pid", "--fork", "--kill-child=SIGKILL", "--mount-proc"] if own_pids else []
    command = [
        unshare,
        *userns,
        *netns,
        *uts,
        "--mount",
        "--propagation",
        "private",
        *pidns,
        "sh",
        "-c",
        script,
        name,
        *argv,
    ]
    shell = shutil.which("sh") or "/bin/sh"
    ignoring = _IGNORING if own_pids else ""
    if not netns:
        return [shell, "-c", ignoring + 'exec "$@"', name, *command] if own_pids else command
    # the host's network namespace, open as fd 3 for pasta to be started in
    return [shell, "-c", ignoring + 'exec 3</proc/self/ns/net && exec "$@"', name, *command]


PASTA_READY_SECONDS = 10


def network_isolation() -> str | None:
    """Why replicas cannot have a network of their own here, None when they can."""
    if not shutil.which("pasta"):
        return "pasta is missing (sudo scripts/setup installs Debian's passt)"
    if not (shutil.which("nsenter") and shutil.which("setpriv")):
        return "nsenter or setpriv is missing (apt-get install util-linux)"
    if os.geteuid() != 0:
        return "it needs root (a rootless run keeps the host's network)"
    return None


def own_network(ports: Sequence[int]) -> list[str]:
    """Shell commands, run inside a fresh network namespace with the host's open as fd 3,
    that start pasta (Debian's passt) in the host's namespace to forward `ports` on this
    namespace's 127.0.0.1 to the host's, and wait until the first one listens. pasta is
    the replica's child (the shell execs the replica) in its process group: it dies with
    the replica (parent-death signal) and with the group."""
    if not ports:
        raise ValueError("a network of its own needs at least the apiserver's port")
    pasta = shutil.which("pasta") or "pasta"
    spec = ",".join(str(p) for p in ports)
    listening = f"0100007F:{ports[0]:04X} 00000000:0000 0A"
    wait = (
        f"n=0; until grep -q '{listening}' /proc/net/tcp; do n=$((n+1)); "
        f"[ $n -gt {PASTA_READY_SECONDS * 20} ] && "
        "{ echo 'error: pasta did not forward the apiserver port into the network namespace'"
        " >&2; exit 1; }; sleep 0.05; done"
    )
    return [
        "exec 4</proc/self/ns/net",
        f"{{ nsenter --net=/proc/self/fd/3 setpriv --pdeathsig KILL {pasta} --foreground"
        f" --quiet --runas 0 --tcp-ports none --udp-ports none --udp-ns none --tcp-ns {spec}"
        " --netns /proc/self/fd/4 </dev/null >/dev/null 2>&1 & }",
        "exec 3<&- 4<&-",
        wait,
    ]


def overlay(target: str | Path, upper: Path, work: Path) -> str:
    """A shell command that lays a writable private layer over `target` (host unchanged).

    Rootless, where mounts lie below `target`, the kernel refuses it as an overlay's lower
    layer (a user namespace may not clone a mount with locked mounts under it: a hosted
    runner's /run, Docker's network namespaces in /run here): a `shadow` instead."""
    if os.geteuid() != 0 and mounts_below(target):
        return shadow(target, upper.with_name(upper.name + "-shadowed"))
    upper.mkdir(mode=0o700, parents=True, exist_ok=True)
    upper.chmod(os.stat(target).st_mode & 0o7777)  # the merged top has the upper's mode
    work.mkdir(mode=0o700, parents=True, exist_ok=True)
    options = f"lowerdir={target},upperdir={upper},workdir={work}"
    return f"mount -t overlay overlay -o {shlex.quote(options)} {shlex.quote(str(target))}"


def mounts_below(target: str | Path, mountinfo: str = "/proc/self/mountinfo") -> bool:
    """Whether anything is mounted below `target` (not at it)."""
    prefix = os.path.realpath(target).rstrip("/") + "/"
    with open(mountinfo) as lines:
        return any(line.split()[4].startswith(prefix) for line in lines)


def shadow(target: str | Path, scratch: Path) -> str:
    """A shell command that lays a private tmpfs over `target` with each of its entries
    bound back in: what a process makes at the top of `target` is its own, every entry it
    had stays the host's, and the host is never written."""
    scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
    t, o = shlex.quote(str(target)), shlex.quote(str(scratch))
    bind_back = (
        f'for e in {o}/* {o}/.[!.]*; do [ -e "$e" ] || [ -L "$e" ] || continue; '
        f'n={t}/"${{e##*/}}"; '
        'if [ -L "$e" ]; then cp -P "$e" "$n"; '
        'elif [ -d "$e" ]; then mkdir -p "$n" && mount --rbind "$e" "$n"; '
        'else : > "$n" && mount --bind "$e" "$n"; fi || exit 1; done'
    )
    return f"mount --rbind {t} {o} && mount -t tmpfs -o mode=755 tmpfs {t} && {{ {bind_back}; }}"


def provide(source: Path, target: str, scratch: Path, *, folder: bool | None = None) -> list[str]:
    """Shell commands that make the file or folder (`folder`; by default, what `source` is
    now) `source` appear at the absolute path `target`.

    Symlinks on the way are followed (/var/run is usually /run); where the path does not
    exist, its nearest existing ancestor gets a private overlay so what is missing can be
    made in it: the host is never written.
    """
    real = Path(os.path.realpath(target))
    setup = []
    if not real.exists():
        existing = real.parent
        while not existing.exists():
            existing = existing.parent
        setup.append(overlay(existing, scratch / "upper", scratch / "work"))
        if source.is_dir() if folder is None else folder:
            setup.append(f"mkdir -p {shlex.quote(str(real))}")
        else:
            setup.append(f"mkdir -p {shlex.quote(str(real.parent))}")
            setup.append(f"touch {shlex.quote(str(real))}")
    setup.append(f"mount --bind {shlex.quote(str(source))} {shlex.quote(str(real))}")
    return setup


def provide_all(binds: Sequence[tuple[Path, str]], scratch: Path) -> list[str]:
    """`provide` for each (source, target) pair, each with scratch space of its own."""
    setup: list[str] = []
    for i, (source, target) in enumerate(binds):
        setup += provide(source, target, scratch / f"volume-{i}")
    return setup


def provide_directory(source: Path, target: str, scratch: Path) -> list[str]:
    return provide(source, target, scratch, folder=True)
