"""The plan a run would follow for a profile, said before anything starts.

A vendor learns from it in seconds what `mkdc run` would do with the profile: how the
dispatcher starts, as whom and with which privileges, what is made before it starts, what
of a deploy folder is not applied, and which checks judge it. `mkdc profile check`
prints it after validating; `mkdc run` prints it at its start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness import suite
from harness.cluster import builds, multikueue
from harness.durations import format_duration
from harness.profile import objects
from harness.profile.model import (
    DEFAULT_NAMESPACE,
    IMAGE_BINARY,
    Profile,
    RunSpec,
    fill,
    find_executable,
)
from harness.suite import CheckInfo
from harness.userfiles import display

BASELINE = (
    "the baseline role: reads Workloads and the MultiKueue objects, patches Workload status,"
    f" writes Events and Leases in {DEFAULT_NAMESPACE}"
)


def plan(
    profile: Profile,
    workers: Sequence[str],
    catalogue: Mapping[str, CheckInfo],
    provider: str = "local",
) -> list[str]:
    """The plan as lines `what   how`, for the console (on `provider`: a deploy folder is
    read on the local provider, applied as written on the others)."""
    rows: list[tuple[str, str]] = [("dispatcher", profile.dispatcher_name)]
    run = profile.run
    if run is None:
        rows.append(("starts", "nothing: built into Kueue (its multiKueue.dispatcherName)"))
    else:
        rows += _start(profile, run)
    rows += _environment(profile, workers)
    if run is not None and run.deploy is not None and provider != "local":
        rows = _applied(run, rows)
    rows += _checks(profile, catalogue)
    width = max(len(what) for what, _ in rows) + 2
    return [f"  {what:{width}}{how}" for what, how in rows]


def _start(profile: Profile, run: RunSpec) -> list[tuple[str, str]]:
    rows = [("starts", _how(profile, run))]
    if run.image is None and "{binary}" not in run.command[0]:
        rows.append(("executable", _executable(profile, run)))
    if run.go_build is not None:
        built = run.built or builds.go_module_binary(run.go_build)
        state = "cached" if built.is_file() else "built before any cluster starts"
        rows.append(("goBuild", f"{display(run.go_build)} -> {built} ({state})"))
    rows.append(("replicas", f"{run.replicas}, network: {_network(run)}"))
    rows.append(("identity", _identity(run)))
    rows.append(("ready within", format_duration(run.ready_timeout) or ""))
    writes = profile.nomination_writes or "the default for the Kueue version"
    rows.append(("writes", f"nominations by {writes}"))
    rows.append(("privileges", BASELINE))
    rows += [("", f"+ {line}") for line in run.rbac.described()]
    if run.env:
        rows.append(("env", ", ".join(sorted(run.env))))
    return rows


def _how(profile: Profile, run: RunSpec) -> str:
    """The command or image, with {binary} filled and per-replica values as placeholders."""
    if run.image is not None:
        source = (
            f"built from goBuild, the binary at {IMAGE_BINARY}"
            if run.go_build is not None
            else "must be in the local Docker engine (never pulled)"
        )
        return f"container {profile.shown_command()} ({source})"
    if run.deploy is not None:
        pod = run.deploy.pod
        return f"Deployment {pod.deployment}, container {pod.container}: {profile.shown_command()}"
    return f"{'as in a Pod' if run.pod_environment else 'as a process'}: {profile.shown_command()}"


def _network(run: RunSpec) -> str:
    if run.image is not None:
        return "the host's (a Docker container, local provider) or a Pod's (kind)"
    if run.host_network:
        return "the host's (hostNetwork)"
    return "one of its own per replica where the machine allows (pasta, as root), else the host's"


def _executable(profile: Profile, run: RunSpec) -> str:
    """Where the host command's executable is found (python is mkdc's interpreter)."""
    first = run.command[0]
    values = {"profile_dir": str(profile.path.parent.resolve())}
    return find_executable(fill(first, values), profile.path.parent) or f"{first}: not found"


def _identity(run: RunSpec) -> str:
    if run.image is not None or run.deploy is not None or run.pod_environment:
        said = (
            f"a ServiceAccount of its own per replica in {DEFAULT_NAMESPACE}"
            f" ({run.account}-0, {run.account}-1, ...), read as in a Pod"
            " (service-account files, KUBERNETES_SERVICE_HOST/PORT, POD_NAME, POD_NAMESPACE)"
        )
        if run.image is None:
            said += (
                "; on the local provider confined as a container: its own /tmp, PID namespace and"
                " host name, an unprivileged user, no run directory in view"
            )
        return said
    return "a token kubeconfig of its own per replica ({kubeconfig}), as a plain process"


def _environment(profile: Profile, workers: Sequence[str]) -> list[tuple[str, str]]:
    env = profile.environment
    pattern = env.worker_kubeconfig_secret or multikueue.SECRET_PATTERN
    secrets = ", ".join(multikueue.worker_secret_name(w, pattern) for w in workers)
    named = "named by the profile" if env.clusters else "by default; --workers N for more"
    rows = [
        ("workers", f"{len(workers)} ({named}): {', '.join(workers)}"),
        ("Secrets", f"{pattern}: {secrets}"),
        ("clusters", f"clusterScope {env.cluster_scope}"),
    ]
    run = profile.run
    if run is not None:
        made = objects.planned(run.objects, workers, DEFAULT_NAMESPACE, profile.dispatcher_name)
        if run.deploy is not None:
            made += objects.planned(
                run.deploy.objects, workers, DEFAULT_NAMESPACE, profile.dispatcher_name
            )
        rows += [("before start", line) for line in made] or [("before start", "nothing")]
        if run.deploy is not None:
            notes = run.deploy.notes or ("nothing: every field is applied",)
            rows += [("not applied", note) for note in notes]
    return rows


def _applied(run: RunSpec, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`rows` for a deploy folder on kind or existing clusters: its documents applied as
    written, its Pods the replicas, its own ServiceAccount and RBAC (no baseline role)."""
    folder = run.deploy
    assert folder is not None
    docs = ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in folder.documents)
    image = "built from goBuild" if run.go_build is not None else "from the local Docker engine"
    said = {
        "starts": f"Deployment {folder.pod.deployment}: its Pods, image {folder.pod.image}"
        f" ({image}, never pulled)",
        "replicas": f"{run.replicas}, each a Pod of the Deployment, on the Pod network",
        "identity": f"the folder's ServiceAccount {run.account}, each Pod its own token",
        "privileges": "the folder's RBAC, as written:",
        "before start": f"applied to the manager as written (server-side): {docs}",
    }
    if run.objects:
        said["before start"] += "; and spec.run.objects"
    dropped = ("before start", "not applied")
    out = [(what, said.get(what, how)) for what, how in rows if what not in dropped]
    out.append(("before start", said["before start"]))
    return [*out, ("not applied", "said once the images are checked (a container left out)")]


def _checks(profile: Profile, catalogue: Mapping[str, CheckInfo]) -> list[tuple[str, str]]:
    """Core checks always; an extended check when its feature is claimed, else it is
    reported not supported."""
    judged = [
        c for c in catalogue.values() if c.feature is None or profile.claims.claims(c.feature)
    ]
    unclaimed = [c for c in catalogue.values() if c not in judged]
    rows = [("judged on", ", ".join(c.id for c in judged))]
    features = sorted({str(c.feature) for c in unclaimed})
    for feature in features:
        ids = ", ".join(c.id for c in unclaimed if c.feature == feature)
        rows.append(("not supported", f"{ids}: {feature} is not claimed"))
    return rows


def header(path: Path) -> str:
    return f"profile {display(path)}: valid; a run would follow this plan"


def announce(
    profile: Profile, workers: Sequence[str], say: Callable[[str], None], provider: str = "local"
) -> None:
    """The plan said line by line through `say` (mkdc run's console, at its start)."""
    say(header(profile.path))
    for line in plan(profile, workers, suite.load().catalogue, provider):
        say(line)
