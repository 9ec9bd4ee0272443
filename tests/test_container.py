"""Dispatchers as container images: the profile field, and the Deployment and container
specs the harness builds from it (pure functions; no Docker, no cluster)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cluster.identity import Credentials
from harness.errors import UserError
from harness.orchestrate import container
from harness.orchestrate.dispatcher import SERVICEACCOUNT_DIR
from harness.profile import IMAGE_BINARY, Profile, load_profile

GO_MODULE = Path(__file__).resolve().parents[1] / "dispatchers" / "example-go"


def image_profile(tmp_path: Path, **run: Any) -> Path:
    (tmp_path / "settings.yaml").write_text("stepSize: 1\n")
    doc = {
        "apiVersion": "mkdc/v1alpha1",
        "kind": "DispatcherProfile",
        "metadata": {"name": "vendor"},
        "spec": {
            "dispatcherName": "example.com/vendor",
            "run": {"image": "example.com/vendor/dispatcher:v1.2", **run},
        },
    }
    path = tmp_path / "vendor.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def load(tmp_path: Path, **run: Any) -> Profile:
    return load_profile(image_profile(tmp_path, **run))


def fails(tmp_path: Path, field: str, words: str, **run: Any) -> None:
    with pytest.raises(UserError) as err:
        load(tmp_path, **run)
    message = str(err.value)
    assert "\n" not in message
    assert f": {field}: " in message and words in message, message


# ---------------------------------------------------------------- the profile


def test_an_image_needs_no_command_and_no_executable_on_this_machine(tmp_path: Path) -> None:
    profile = load(tmp_path)
    assert profile.run is not None
    assert (profile.run.image, profile.run.command) == ("example.com/vendor/dispatcher:v1.2", ())
    assert profile.shown_command() == "image example.com/vendor/dispatcher:v1.2"
    with_args = load(tmp_path, args=["not-on-this-machine", "--ns={namespace}"])
    assert with_args.shown_command().endswith("args not-on-this-machine --ns={namespace}")


def test_the_built_in_image_profile_builds_the_go_example(tmp_path: Path) -> None:
    profile = load_profile("example-go-image")
    assert profile.run is not None and profile.run.image == "mkdc.local/example-go:dev"
    assert profile.run.go_build == GO_MODULE
    assert profile.placeholders("", "kueue-system")["binary"] == IMAGE_BINARY


@pytest.mark.parametrize(
    ("run", "field", "words"),
    [
        ({"image": "Has Spaces:v1"}, "spec.run.image", "not an image reference"),
        ({"image": ""}, "spec.run.image", "not an image reference"),
        ({"image": 3}, "spec.run.image", "must be a string or null, got 3"),
        ({"args": ["x", "--kubeconfig={kubeconfig}"]}, "spec.run.args[1]", "no meaning"),
        ({"env": {"KUBECONFIG": "{kubeconfig}"}}, "spec.run.env.KUBECONFIG", "no meaning"),
        ({"env": {"C": "{profile_dir}/missing.yaml"}}, "spec.run.env.C", "must name a file"),
        ({"env": {"C": "{profile_dir}"}}, "spec.run.env.C", "must name a file"),
        ({"env": {"C": "--c={profile_dir}/settings.yaml"}}, "spec.run.env.C", "must start"),
        ({"podEnvironment": False}, "spec.run.podEnvironment", "always runs as in a Pod"),
        ({"args": ["{binary}"]}, "spec.run.args[0]", "needs spec.run.goBuild"),
        ({"command": ["/dispatcher"]}, "spec.run.command", "give its arguments as spec.run.args"),
    ],
)
def test_bad_image_fields_are_one_line_naming_the_field(
    tmp_path: Path, run: dict[str, Any], field: str, words: str
) -> None:
    fails(tmp_path, field, words, **run)


def test_without_an_image_the_command_is_still_required(tmp_path: Path) -> None:
    path = image_profile(tmp_path)
    doc = yaml.safe_load(path.read_text())
    del doc["spec"]["run"]["image"]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match=r"spec\.run\.command: required"):
        load_profile(path)
    doc["spec"]["run"]["args"] = ["--v=2"]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match=r"spec\.run\.args: goes with spec\.run\.image"):
        load_profile(path)


# ------------------------------------------------------------------ the plan


def test_files_next_to_the_profile_are_mounted_and_values_point_there(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "settings.yaml").write_text("other\n")
    profile = load(
        tmp_path,
        args=["--config={namespace}", "{profile_dir}/settings.yaml"],
        env={
            "A": "{profile_dir}/settings.yaml",
            "B": "{profile_dir}/conf/settings.yaml",
            "NAME": "{dispatcher_name}",
        },
    )
    plan = container.plan(profile, "kueue-system")
    mounted = f"{container.MOUNT_DIR}/settings.yaml"
    assert plan.args == ("--config=kueue-system", mounted)
    assert plan.env == {
        "A": mounted,
        "B": f"{container.MOUNT_DIR}/2-settings.yaml",
        "NAME": "example.com/vendor",
    }
    assert plan.files == {
        "settings.yaml": (tmp_path / "settings.yaml").resolve(),
        "2-settings.yaml": (tmp_path / "conf" / "settings.yaml").resolve(),
    }
    cm = container.configmap(plan, "kueue-system", {"run": "r1"})
    assert cm["data"] == {"settings.yaml": "stepSize: 1\n", "2-settings.yaml": "other\n"}
    assert cm["metadata"] == {
        "name": container.FILES_CONFIGMAP,
        "namespace": "kueue-system",
        "labels": {"run": "r1"},
    }


def test_a_deployment_per_replica_with_its_own_service_account(tmp_path: Path) -> None:
    profile = load(tmp_path, env={"DISPATCHER_CONFIG": "{profile_dir}/settings.yaml"})
    plan = container.plan(profile, "kueue-system")
    doc = container.deployment(plan, 1, "kueue-system", {"run": "r1"})
    assert doc["metadata"]["name"] == "mkdc-dispatcher-1"
    assert doc["metadata"]["namespace"] == "kueue-system"
    assert doc["spec"]["replicas"] == 1 and doc["spec"]["strategy"] == {"type": "Recreate"}
    selector = {container.REPLICA_LABEL: "1"}
    assert doc["spec"]["selector"] == {"matchLabels": selector}
    pod = doc["spec"]["template"]["spec"]
    assert doc["spec"]["template"]["metadata"]["labels"] == {"run": "r1", **selector}
    assert pod["serviceAccountName"] == "mkdc-dispatcher-1"
    assert pod["automountServiceAccountToken"] is True
    [box] = pod["containers"]
    assert box["image"] == "example.com/vendor/dispatcher:v1.2"
    assert box["imagePullPolicy"] == "Never"
    assert "args" not in box  # the image's own entrypoint and arguments
    env = {e["name"]: e for e in box["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["MKDC_REPLICA"]["value"] == "1"
    assert env["DISPATCHER_CONFIG"]["value"] == f"{container.MOUNT_DIR}/settings.yaml"
    assert box["volumeMounts"] == [
        {"name": "files", "mountPath": container.MOUNT_DIR, "readOnly": True}
    ]
    assert pod["volumes"] == [{"name": "files", "configMap": {"name": container.FILES_CONFIGMAP}}]


def test_a_deployment_without_files_mounts_nothing_and_passes_args(tmp_path: Path) -> None:
    profile = load(tmp_path, args=["--leader-elect"], env={"POD_NAME": "fixed"})
    doc = container.deployment(container.plan(profile, "ns"), 0, "ns", {})
    pod = doc["spec"]["template"]["spec"]
    [box] = pod["containers"]
    assert box["args"] == ["--leader-elect"]
    assert "volumes" not in pod and "volumeMounts" not in box
    names = [e["name"] for e in box["env"]]
    assert names.count("POD_NAME") == 1  # the profile's value wins over the downward API
    assert {"name": "POD_NAME", "value": "fixed"} in box["env"]


def test_a_local_container_sees_what_a_pod_sees(tmp_path: Path) -> None:
    sa = tmp_path / "sa"
    sa.mkdir()
    creds = Credentials(tmp_path / "kc", sa, "https://127.0.0.1:6443")
    profile = load(
        tmp_path, args=["--v=2"], env={"DISPATCHER_CONFIG": "{profile_dir}/settings.yaml"}
    )
    opts = container.container_options(
        container.plan(profile, "kueue-system"), creds, 0, "mkdc-r1-dispatcher-0", {"run": "r1"}
    )
    assert opts["image"] == "example.com/vendor/dispatcher:v1.2"
    assert opts["command"] == ["--v=2"]
    assert opts["network_mode"] == "host"
    assert opts["name"] == "mkdc-r1-dispatcher-0" and opts["labels"] == {"run": "r1"}
    assert opts["env"]["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert opts["env"]["KUBERNETES_SERVICE_PORT"] == "6443"
    assert opts["env"]["POD_NAMESPACE"] == "kueue-system"
    assert opts["env"]["MKDC_REPLICA"] == "0"
    assert opts["env"]["DISPATCHER_CONFIG"] == f"{container.MOUNT_DIR}/settings.yaml"
    assert "KUBECONFIG" not in opts["env"]
    assert opts["volumes"] == [
        (str(sa.resolve()), SERVICEACCOUNT_DIR, "ro"),
        (str((tmp_path / "settings.yaml").resolve()), f"{container.MOUNT_DIR}/settings.yaml", "ro"),
    ]


# ------------------------------------------------------------------ the image


def test_an_image_not_in_docker_is_one_line_saying_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(container.shutil, "which", lambda _name: "/usr/bin/docker")
    calls: list[list[str]] = []

    def absent(argv: list[str], **_kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 1, "", "Error: No such image")

    monkeypatch.setattr(subprocess, "run", absent)
    with pytest.raises(UserError) as err:
        container.prepare(load(tmp_path), "local", lambda _msg: None)
    assert "\n" not in str(err.value)
    assert "not in the local Docker engine" in str(err.value)
    assert "docker load" in str(err.value) and "goBuild" in str(err.value)
    assert calls == [
        ["/usr/bin/docker", "image", "inspect", "--format", "{{.Id}}", calls[0][-1]]
    ]  # inspected, never pulled


def test_an_image_is_for_the_providers_that_run_containers(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--provider local or kind, not existing"):
        container.prepare(load(tmp_path), "existing", lambda _msg: None)


# ------------------------------------------------------------------ the runners


class FakeWrapped:
    """What docker-py's Container answers, for the few calls the runner makes."""

    def __init__(self) -> None:
        self.status, self.starts = "running", 1
        self.attrs: dict[str, Any] = {}

    def reload(self) -> None:
        self.attrs = {"State": {"Status": self.status, "ExitCode": 137}}

    def kill(self) -> None:
        self.status = "exited"

    def start(self) -> None:
        self.status, self.starts = "running", self.starts + 1

    def logs(self, **_kw: Any) -> bytes:
        return b"started\n" * self.starts


class FakeContainer:
    made: list[FakeContainer] = []

    def __init__(self, image: str, **kwargs: Any) -> None:
        self.image, self.kwargs = image, kwargs
        self.wrapped = FakeWrapped()
        self.stopped = False
        FakeContainer.made.append(self)

    def with_kwargs(self, **kwargs: Any) -> FakeContainer:
        self.extra = kwargs
        return self

    def start(self) -> FakeContainer:
        return self

    def get_wrapped_container(self) -> FakeWrapped:
        return self.wrapped

    def stop(self) -> None:
        self.stopped = True


def test_local_containers_are_killed_restarted_and_removed_with_their_cleanup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import testcontainers.core.container as tc

    from harness.cluster import rundir
    from harness.cluster.procs import Supervisor

    monkeypatch.setattr(tc, "DockerContainer", FakeContainer)
    monkeypatch.setattr("harness.orchestrate.dispatcher.SETTLE_SECONDS", 0.2)
    FakeContainer.made = []
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    sa = tmp_path / "sa"
    sa.mkdir()
    creds = [Credentials(tmp_path / "kc", sa, "https://127.0.0.1:6443")]
    profile = load(tmp_path)
    runner = container.ContainerRunner(
        profile, Supervisor(run_dir), creds, {"run": "r1"}, "mkdc-r1"
    )
    runner.start_all()
    [box] = FakeContainer.made
    assert box.kwargs["name"] == "mkdc-r1-dispatcher-0"
    assert box.extra == {"network": None, "network_mode": "host", "labels": {"run": "r1"}}
    remove = [runner.docker, "rm", "-f", "mkdc-r1-dispatcher-0"]
    assert rundir._cleanups(run_dir) == [remove]  # a killed run's container goes with its dir
    assert runner.alive(0)
    runner.kill(0)
    assert not runner.alive(0)
    runner.restart(0)
    assert runner.alive(0) and len(FakeContainer.made) == 1  # the same container again
    runner.stop_all()
    assert box.stopped and rundir._cleanups(run_dir) == []
    assert (run_dir / "logs" / "dispatcher-0.log").read_bytes() == b"started\n" * 2


def test_a_local_container_that_exits_at_start_names_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import testcontainers.core.container as tc

    from harness.cluster.procs import Supervisor
    from harness.orchestrate.dispatcher import StartFailure

    monkeypatch.setattr(tc, "DockerContainer", FakeContainer)
    monkeypatch.setattr(FakeContainer, "start", lambda self: self.wrapped.kill() or self)
    monkeypatch.setattr("harness.orchestrate.dispatcher.SETTLE_SECONDS", 0.2)
    (tmp_path / "run").mkdir()
    creds = [Credentials(tmp_path / "kc", tmp_path, "https://127.0.0.1:6443")]
    runner = container.ContainerRunner(
        load(tmp_path), Supervisor(tmp_path / "run"), creds, {}, "mkdc-r1"
    )
    with pytest.raises(StartFailure, match=r"dispatcher-0\) exited with code 137 at start"):
        runner.start_all()
    runner.stop_all()


def _pod(name: str, *, phase: str = "Running", ready: bool = True, restarts: int = 0) -> Any:
    from types import SimpleNamespace as NS

    status = NS(
        ready=ready,
        started=ready,
        restart_count=restarts,
        container_id=f"containerd://{name}-id",
        state=NS(waiting=None),
    )
    return NS(
        metadata=NS(name=name, deletion_timestamp=None),
        spec=NS(node_name="mkdc-manager-control-plane"),
        status=NS(phase=phase, container_statuses=[status]),
    )


class FakeCore:
    def __init__(self, pods: list[Any]) -> None:
        self.pods = pods
        self.deleted: list[tuple[str, int]] = []

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> Any:
        from types import SimpleNamespace as NS

        return NS(items=list(self.pods))

    def delete_namespaced_pod(self, name: str, namespace: str, grace_period_seconds: int) -> None:
        self.deleted.append((name, grace_period_seconds))
        self.pods = [p for p in self.pods if p.metadata.name != name]

    def read_namespaced_pod_log(self, name: str, namespace: str) -> str:
        return f"log of {name}\n"


class FakeApps:
    def __init__(self) -> None:
        self.scaled: list[tuple[str, int, str]] = []

    def patch_namespaced_deployment_scale(
        self, name: str, namespace: str, body: dict[str, Any], _content_type: str
    ) -> None:
        self.scaled.append((name, body["spec"]["replicas"], _content_type))


def test_a_kind_replica_is_crashed_kept_down_and_scaled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cluster.procs import Supervisor

    execs: list[list[str]] = []

    def docker(argv: list[str], _what: str) -> str:
        execs.append(argv)
        return ""

    monkeypatch.setattr(container, "_docker", docker)
    runner = object.__new__(container.PodRunner)  # no cluster: its clients are fakes
    profile = load(tmp_path)
    assert profile.run is not None
    runner.run, runner.namespace, runner.saved = profile.run, "kueue-system", set()
    runner.supervisor = Supervisor(tmp_path)
    core, apps = FakeCore([_pod("p1")]), FakeApps()
    runner.core, runner.apps = core, apps  # type: ignore[assignment]
    assert runner.alive(0)
    runner.kill(0)
    kill = ["ctr", "-n", "k8s.io", "task", "kill", "-s", "SIGKILL", "p1-id"]
    assert execs == [["docker", "exec", "mkdc-manager-control-plane", *kill]]
    merge = "application/merge-patch+json"
    assert apps.scaled == [("mkdc-dispatcher-0", 0, merge)]
    assert core.deleted == [("p1", 0)]
    assert not runner.alive(0)
    assert (tmp_path / "logs" / "dispatcher-0.log").read_text() == "--- pod p1\nlog of p1\n"
    core.pods = [_pod("p2", phase="Pending", ready=False)]
    assert not runner.alive(0)
    core.pods = [_pod("p2")]  # what the Deployment makes once scaled back
    runner.restart(0)
    assert apps.scaled[-1] == ("mkdc-dispatcher-0", 1, merge)
    core.pods = [_pod("p3", restarts=1)]
    with pytest.raises(container.StartFailure, match=r"pod p3: restarted 1 time\(s\)"):
        runner._check(0)
