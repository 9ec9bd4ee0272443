"""Running an external dispatcher from its profile: start, watch, kill, restart, stop.

The command may be any executable in any language. Each replica runs with its own
least-privilege identity, in its own process group, with its log in the run directory;
the harness restarts or kills it when a check asks. By default a replica runs as in a
Pod (`spec.run.podEnvironment`), because that is where vendors' controllers expect to be:
in-cluster config, leader election in "its" namespace, no flags.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from harness.cluster import exitcause, mountns, probes, sandbox
from harness.cluster.identity import Credentials, account_name
from harness.cluster.kueue_install import NAMESPACE
from harness.cluster.probes import Probe
from harness.cluster.procs import Supervisor
from harness.errors import UserError
from harness.orchestrate.kubelet import Kubelet
from harness.profile import Profile
from harness.profile.deploy import Pod
from harness.recording.audit_log import audit_read

SETTLE_SECONDS = 3.0  # a replica that is still alive this long after start counts as started
SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class StartFailure(UserError):
    """A replica died at start or never became ready; `process` names its log."""

    def __init__(self, message: str, process: str) -> None:
        super().__init__(message)
        self.process = process


def pod_variables(creds: Credentials, pod_name: str) -> dict[str, str]:
    """What the kubelet gives every container (service host and port) plus the downward-API
    variables controllers commonly read (POD_NAME, POD_NAMESPACE)."""
    server = urlsplit(creds.server)
    port = server.port or 443
    return {
        "KUBERNETES_SERVICE_HOST": server.hostname or "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
        "POD_NAME": pod_name,
        "POD_NAMESPACE": NAMESPACE,
    }


class DispatcherRunner:
    """The replicas of one external dispatcher."""

    # a replica that exits by itself is started again (`ExitWatch`), as a kubelet does
    restarts_exited = False

    def __init__(
        self,
        profile: Profile,
        supervisor: Supervisor,
        credentials: list[Credentials],
        network: Sequence[int] | None = None,
    ) -> None:
        """`network`: the host ports (the apiservers') a replica reaches from a network
        namespace of its own; None keeps the host's network."""
        if profile.run is None:
            raise ValueError("a built-in dispatcher has nothing to run")
        self.profile = profile
        self.run = profile.run
        self.supervisor = supervisor
        self.credentials = credentials
        self.network = network
        deploy = self.run.deploy
        self.restarts_exited = deploy is not None and deploy.pod.restart_policy == "Always"
        self.users: dict[int, tuple[int, int] | None] = {}  # each replica's, as started
        self.stop_reasons: dict[int, str] = {}  # why the harness stopped one, as a kubelet
        self.kubelet = Kubelet(
            deploy.pod if deploy else None, self.run.replicas, self.pid, self.stop, self.target
        )

    def process_name(self, replica: int) -> str:
        return f"dispatcher-{replica}"

    def start(self, replica: int) -> None:
        creds = self.credentials[replica]
        name = self.process_name(replica)
        argv = self.profile.render_command(creds.kubeconfig, NAMESPACE)
        env = self.profile.render_env(creds.kubeconfig, NAMESPACE)
        env.setdefault("MKDC_REPLICA", str(replica))
        unset: tuple[str, ...] = ()
        setup: list[str] = []
        scratch = self.supervisor.run_dir / f"{name}-mounts"
        box = self.sandbox(argv, env, creds) if self.run.pod_environment else None
        if box is not None:
            env = {**pod_variables(creds, name), **env, "TMPDIR": "/tmp", "HOME": "/"}
            env["HOSTNAME"] = name  # its host name, as a Pod's is its name
            unset = () if "KUBECONFIG" in env else ("KUBECONFIG",)  # a Pod has none
            sandbox.give([creds.serviceaccount_dir, creds.kubeconfig], box.user)
            setup = mountns.provide_directory(creds.serviceaccount_dir, SERVICEACCOUNT_DIR, scratch)
        binds: list[tuple[Path, str]] = []
        if self.run.deploy is not None:
            pod = self.run.deploy.pod
            env.update(downward_api(pod.pod_fields, name, replica, self.run.account))
            binds = volumes(pod, self.supervisor.run_dir / "volumes", scratch, box)
            if pod.working_dir and box is not None:  # private and empty, as an image's own
                binds.append((private_folder(scratch / "workdir", box), pod.working_dir))
        self.users[replica] = box.user if box else None
        if box is not None:
            setup += sandbox.setup(box, scratch, binds)
            argv = [*sandbox.drop_privileges(box), *argv]
        else:
            setup += mountns.provide_all(binds, scratch)
        if box is not None or self.network is not None:
            argv = mountns.private_command(
                setup,
                argv,
                name,
                self.network,
                own_pids=box is not None,
                hostname=name if box is not None else None,
            )
        self.supervisor.start(name, argv, env=env, unset=unset, cwd=Path.cwd())

    def sandbox(self, argv: list[str], env: dict[str, str], creds: Credentials) -> sandbox.Sandbox:
        """How a replica is confined as a kubelet confines a container: its user, the
        folders it does not see, what it still reads (of the run directory, only its own
        kubeconfig, where `{kubeconfig}` names it), where it starts."""
        pod = self.run.deploy.pod if self.run.deploy is not None else None
        # a container starts in its workingDir, else (here) in its private /tmp; a host
        # command where mkdc runs, so `python -m package` finds the package there
        working_dir = (pod.working_dir or "/tmp") if pod else str(Path.cwd())
        needed = sandbox.needed_paths(argv, env, (self.supervisor.run_dir,), (creds.kubeconfig,))
        if pod is None:
            needed += (Path(working_dir),)
        return sandbox.Sandbox(
            user=sandbox.user_for(
                pod.run_as_user if pod else None, pod.run_as_group if pod else None
            ),
            hidden=sandbox.hidden_roots(self.supervisor.run_dir),
            needed=needed,
            working_dir=working_dir,
        )

    def start_all(self) -> None:
        """Start every replica and make sure none dies at start (exit 2 naming its log).

        Each replica's log begins with this run: on an environment several runs share, an
        earlier run's dispatcher wrote to the same file (its report keeps its own copy), and
        its lines would be quoted as this one's exit cause and kept in this one's report.
        """
        for replica in range(self.run.replicas):
            self.supervisor.log_path(self.process_name(replica)).unlink(missing_ok=True)
            self.start(replica)
        self.kubelet.start()
        deadline = time.monotonic() + min(SETTLE_SECONDS, self.run.ready_timeout)
        while time.monotonic() < deadline:
            for replica in range(self.run.replicas):
                self._check(replica)
            time.sleep(0.2)

    def pid(self, replica: int) -> int | None:
        """The running replica's first process, None when it is not running."""
        proc = self.supervisor.procs.get(self.process_name(replica))
        return proc.popen.pid if proc is not None and proc.alive() else None

    def target(self, replica: int) -> probes.Target:
        """Where its probes go: into its namespaces where it has its own."""
        own = self.run.pod_environment
        return probes.Target(
            pid=self.pid(replica) if own or self.network is not None else None,
            network=self.network is not None,
            user=self.users.get(replica),
        )

    def stop(self, replica: int, why: str) -> None:
        """Stop a replica as a kubelet stops a container it gave up on: SIGTERM, SIGKILL
        after its grace period; the exit watch says `why` and starts it again."""
        self.stop_reasons[replica] = why
        pod = self.run.deploy.pod if self.run.deploy else None
        grace = min(pod.grace_seconds if pod else 10.0, 10.0)
        self.supervisor.stop(self.process_name(replica), grace=grace)

    def wait_ready(self, audit_log: Path, users: Iterable[str], since: int = 0) -> None:
        """Ready = some replica listed or watched Workloads on the manager (the audit log
        after byte `since` says so: before it, an earlier run's replicas of the same
        names), within readyTimeout of its start; a replica that dies meanwhile fails."""
        users = set(users)
        deadline = time.monotonic() + self.run.ready_timeout
        position = since
        pod = self.run.deploy.pod if self.run.deploy else None
        if pod is not None and pod.readiness is not None:
            return self._wait_probed(pod.readiness, deadline)
        while True:
            for replica in range(self.run.replicas):
                self._check(replica)
            position, seen = _reads_since(audit_log, position, users)
            if seen:
                return
            if time.monotonic() > deadline:
                raise StartFailure(
                    f"the dispatcher was not ready within its readyTimeout "
                    f"({self.run.ready_timeout:.0f}s): no replica listed or watched Workloads "
                    "on the manager (a slow start needs a longer spec.run.readyTimeout)",
                    self.process_name(0),
                )
            time.sleep(0.2)

    def _wait_probed(self, probe: Probe, deadline: float) -> None:
        """Ready = every replica's readiness probe passed, as a Deployment's rollout."""
        while True:
            for replica in range(self.run.replicas):
                self._check(replica)
            waiting = [r for r in range(self.run.replicas) if not self.kubelet.ready(r)]
            if not waiting:
                return
            if time.monotonic() > deadline:
                replica = waiting[0]
                why = self.kubelet.readiness_failure(replica) or "it never answered"
                raise StartFailure(
                    f"the dispatcher ({self.process_name(replica)}) was not ready within its"
                    f" readyTimeout ({self.run.ready_timeout:.0f}s): readiness probe"
                    f" {probe.describe()}: {why} (a slow start needs a longer"
                    " spec.run.readyTimeout)",
                    self.process_name(replica),
                )
            time.sleep(0.2)

    def _check(self, replica: int) -> None:
        name = self.process_name(replica)
        proc = self.supervisor.procs.get(name)
        if proc is not None and not proc.alive():
            raise StartFailure(
                f"the dispatcher ({name}) exited with code {proc.popen.returncode} at start:"
                f" {exit_cause(proc.log, shared_network=self.network is None)}",
                name,
            )

    def kill(self, replica: int = 0) -> None:
        """SIGKILL, as a crash would."""
        self.supervisor.stop(self.process_name(replica), sig=signal.SIGKILL, grace=0)

    def restart(self, replica: int = 0) -> None:
        self.start(replica)

    def alive(self, replica: int = 0) -> bool:
        proc = self.supervisor.procs.get(self.process_name(replica))
        return bool(proc and proc.alive())

    def replica_of(self, user: str) -> int:
        """The replica an audit user is: its own ServiceAccount `...:mkdc-dispatcher-<i>`."""
        return int(user.rsplit("-", 1)[1])

    def save_logs(self) -> None:
        """Host processes write their logs themselves; container runners copy theirs."""

    def stop_all(self) -> None:
        self.kubelet.close()
        self.supervisor.stop_all()


def downward_api(
    fields: dict[str, str], pod_name: str, replica: int, account: str
) -> dict[str, str]:
    """The values a Pod's `fieldRef` variables get, for one replica on this machine."""
    values = {
        "metadata.name": pod_name,
        "metadata.namespace": NAMESPACE,
        "spec.serviceAccountName": account_name(replica, account),
        "spec.nodeName": "mkdc-local",
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
    }
    return {var: values[path] for var, path in fields.items()}


def volumes(
    pod: Pod, files_dir: Path, scratch: Path, box: sandbox.Sandbox | None = None
) -> list[tuple[Path, str]]:
    """Where the pod's volumes come from and where its container expects them: the
    ConfigMaps' and Secrets' keys as files (written once under `files_dir`, as the kubelet
    would), an emptyDir as an empty folder of the replica's own (`scratch`), writable by
    its user as the kubelet makes it."""
    binds: list[tuple[Path, str]] = []
    for mount in pod.mounts:
        folder = files_dir / mount.volume
        if mount.empty_dir:
            folder = private_folder(scratch / f"emptydir-{mount.volume}", box, mount.sub_path)
        elif not folder.exists():
            for relative, content in mount.files.items():
                path = folder / relative
                path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                path.write_bytes(content)
            folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        binds.append((folder / mount.sub_path if mount.sub_path else folder, mount.path))
    return binds


def private_folder(folder: Path, box: sandbox.Sandbox | None, sub_path: str | None = None) -> Path:
    """A replica's own empty folder (and `sub_path` in it), writable by its user as the
    kubelet makes an emptyDir."""
    for made in (folder, folder / (sub_path or "")):
        made.mkdir(mode=0o777, parents=True, exist_ok=True)
        made.chmod(0o777)
    sandbox.give([folder], box.user if box else None)
    return folder


def exit_cause(log: Path, shared_network: bool) -> str:
    """The log line that explains an exit at start, with the fix when a port was taken on
    a network the replicas share."""
    why = exitcause.cause_in(log)
    if shared_network and exitcause.PORT_IN_USE in why:
        reason = mountns.network_isolation() or "this provider runs replicas on the host"
        why += (
            " (a port it listens on is taken on the host, perhaps by another replica:"
            " replicas get a network of their own where pasta can give one, and here"
            f" {reason}; else run one replica, or give each its own port from $MKDC_REPLICA)"
        )
    return why


def _reads_since(audit_log: Path, position: int, users: set[str]) -> tuple[int, bool]:
    """(new position, whether a complete line after `position` is a read by one of users)."""
    try:
        with audit_log.open("rb") as f:
            f.seek(position)
            chunk = f.read()
    except FileNotFoundError:
        return position, False
    complete = chunk[: chunk.rfind(b"\n") + 1]
    for line in complete.splitlines():
        try:
            read = audit_read(json.loads(line))
        except ValueError:
            continue
        # a list or watch of all Workloads: what it does when back (a GET names one)
        if read is not None and not read[0] and read[1]["user"] in users:
            return position + len(complete), True
    return position + len(complete), False
