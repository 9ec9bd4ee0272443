"""A vendor's deploy folder on kind and existing clusters: which images its containers
run from (an init container or sidecar whose image is not here: exit 2 in one line, or
left out where the profile says so), the documents as applied, the writer per Pod in the
audit log, and the manager's audit log on kind."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import UserError
from harness.orchestrate import deployrun
from harness.orchestrate.dispatcher import DispatcherRunner
from harness.profile import load_profile
from harness.providers import kind_config
from harness.recording.audit_log import audit_events, per_pod_user, pod_of
from harness.recording.timeline import Kind

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "dispatchers" / "example-go" / "deploy"
MAIN = "mkdc.example/example-go:0.1.0"
PLUGIN = "us-docker.pkg.dev/vendor/auth/gcp-auth-plugin:1.4"
INIT = {
    "name": "gcp-auth-plugin-init",
    "image": PLUGIN,
    "command": ["cp", "/plugin", "/plugins/"],
    "volumeMounts": [{"name": "plugins", "mountPath": "/plugins"}],
}
ACCOUNT = "system:serviceaccount:kueue-system:example-dispatcher"


def vendor_profile(tmp_path: Path, **run: Any) -> Path:
    """The Go example's deploy folder with an init container from a registry out of reach,
    and a profile for it (`run` added to its spec.run)."""
    folder = tmp_path / "deploy"
    shutil.copytree(EXAMPLE, folder)
    doc = yaml.safe_load((folder / "deployment.yaml").read_text())
    pod = doc["spec"]["template"]["spec"]
    pod["initContainers"] = [INIT]
    pod["volumes"].append({"name": "plugins", "emptyDir": {}})
    (folder / "deployment.yaml").write_text(yaml.safe_dump(doc))
    profile = yaml.safe_load((ROOT / "dispatchers/profiles/example-go-deploy.yaml").read_text())
    profile["spec"]["run"] = {
        "manifests": str(folder),
        "goBuild": str(ROOT / "dispatchers/example-go"),
        **run,
    }
    path = tmp_path / "vendor.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


def run_of(path: Path) -> Any:
    run = load_profile(path).run
    assert run is not None and run.deploy is not None
    return run


def test_an_init_container_whose_image_is_not_here_is_one_line(tmp_path: Path) -> None:
    run = run_of(vendor_profile(tmp_path))
    with pytest.raises(UserError) as err:
        deployrun.images(run, lambda image: False)
    line = str(err.value)
    assert "\n" not in line
    assert "init container gcp-auth-plugin-init" in line and PLUGIN in line
    assert "spec.run.withoutContainers: [gcp-auth-plugin-init]" in line


def test_the_profile_leaves_it_out_and_says_so(tmp_path: Path) -> None:
    run = run_of(vendor_profile(tmp_path, withoutContainers=["gcp-auth-plugin-init"]))
    assert run.without_containers == ("gcp-auth-plugin-init",)
    found = deployrun.images(run, lambda image: False)
    assert (found.main, found.left_out, found.from_docker) == (
        MAIN,
        ("gcp-auth-plugin-init",),
        (),
    )
    [note] = found.notes
    assert note.startswith("init container gcp-auth-plugin-init: left out") and PLUGIN in note
    docs = deployrun.documents(
        run, found.left_out, {"run": "r1"}, pull_never=True, dispatcher_name="example.com/d"
    )
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    assert [c["imagePullPolicy"] for c in pod["containers"]] == ["Never"]
    # the folder as written otherwise: its own ServiceAccount, labelled with the run
    assert pod["serviceAccountName"] == "example-dispatcher"
    assert all(d["metadata"]["labels"]["run"] == "r1" for d in docs)
    assert sorted(d["kind"] for d in docs) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Role",
        "RoleBinding",
        "ServiceAccount",
    ]
    assert deployrun.service_account_user(deployment, run.account) == ACCOUNT


def test_an_image_that_is_here_is_loaded_and_the_container_kept(tmp_path: Path) -> None:
    run = run_of(vendor_profile(tmp_path, withoutContainers=["gcp-auth-plugin-init"]))
    found = deployrun.images(run, lambda image: image == PLUGIN)
    assert (found.from_docker, found.left_out, found.notes) == ((PLUGIN,), (), ())
    docs = deployrun.documents(
        run, found.left_out, {}, pull_never=False, dispatcher_name="example.com/d"
    )
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    init = deployment["spec"]["template"]["spec"]["initContainers"]
    assert init == [INIT]  # as written: pulled by a cluster that is not kind


def test_without_gobuild_the_dispatchers_image_must_be_here(tmp_path: Path) -> None:
    run = run_of(vendor_profile(tmp_path, withoutContainers=["gcp-auth-plugin-init"]))
    with pytest.raises(UserError, match="container manager's image .* not in the local Docker"):
        deployrun.images(dataclasses.replace(run, go_build=None), lambda image: False)
    assert (
        deployrun.images(dataclasses.replace(run, go_build=None), lambda i: i == MAIN).main == MAIN
    )


@pytest.mark.parametrize(
    ("names", "says"),
    [
        (["auth"], "has no init container or sidecar auth (it has: gcp-auth-plugin-init)"),
        (["manager"], "manager is the dispatcher's own container: it cannot be left out"),
    ],
)
def test_without_containers_names_a_side_container(
    tmp_path: Path, names: list[str], says: str
) -> None:
    with pytest.raises(UserError) as err:
        load_profile(vendor_profile(tmp_path, withoutContainers=names))
    assert "spec.run.withoutContainers[0]" in str(err.value) and says in str(err.value)


def test_without_containers_goes_with_manifests(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "dispatchers/profiles/example-go-image.yaml").read_text())
    doc["spec"]["run"]["withoutContainers"] = ["x"]
    doc["spec"]["run"]["goBuild"] = str(ROOT / "dispatchers/example-go")
    doc["spec"]["run"]["env"] = {}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match="withoutContainers.*spec.run.manifests"):
        load_profile(path)


def test_the_binary_goes_where_the_deployment_runs_it(tmp_path: Path) -> None:
    run = run_of(vendor_profile(tmp_path))
    assert deployrun.binary_path(run.deploy) == "/manager"


def entry(pod: str | None, user: str = ACCOUNT) -> dict[str, Any]:
    extra = {"authentication.kubernetes.io/pod-name": [pod]} if pod else {}
    return {
        "stage": "ResponseComplete",
        "verb": "patch",
        "user": {"username": user, "extra": extra},
        "objectRef": {"resource": "workloads", "namespace": "ns", "name": "wl"},
        "responseStatus": {"code": 200},
    }


def test_pods_of_one_account_are_told_apart_by_the_pod() -> None:
    user = per_pod_user(entry("example-dispatcher-5d9c-abcde"), {ACCOUNT})
    assert user == f"{ACCOUNT} (pod example-dispatcher-5d9c-abcde)"
    assert pod_of(user) == "example-dispatcher-5d9c-abcde"
    assert per_pod_user(entry(None), {ACCOUNT}) is None  # a token bound to no Pod
    other = "system:serviceaccount:kueue-system:kueue-controller-manager"
    assert per_pod_user(entry("kueue-abc", other), {ACCOUNT}) is None
    assert pod_of(ACCOUNT) is None
    e = entry("p1")
    e["user"]["username"] = per_pod_user(e, {ACCOUNT})
    [(kind_, _, data)] = audit_events(e, {ACCOUNT, f"{ACCOUNT} (pod p1)"})
    assert kind_ is Kind.WRITE and data["user"] == f"{ACCOUNT} (pod p1)"


class Pods:
    """A DeploymentRunner's replica lookup, without a cluster."""

    history = {0: ["d-1", "d-3"], 1: ["d-2"]}
    name = "d"

    replica_of = deployrun.DeploymentRunner.replica_of


def test_the_replica_of_a_writer() -> None:
    runner: Any = Pods()
    assert runner.replica_of(f"{ACCOUNT} (pod d-3)") == 0
    assert runner.replica_of(f"{ACCOUNT} (pod d-2)") == 1
    with pytest.raises(ValueError, match="no Pod of Deployment d"):
        runner.replica_of(f"{ACCOUNT} (pod d-9)")
    own: Any = object()  # a runner of mkdc's own replicas: the account names it
    user = "system:serviceaccount:kueue-system:mkdc-dispatcher-1"
    assert DispatcherRunner.replica_of(own, user) == 1


def test_the_kind_manager_keeps_an_audit_log(tmp_path: Path) -> None:
    from harness.cluster import versions

    v = versions.select(None, None, None)
    cfg = kind_config.render_kind_config("manager", v, audit_dir=tmp_path)
    [node] = cfg["nodes"]
    assert node["extraMounts"] == [
        {"hostPath": str(tmp_path), "containerPath": kind_config.AUDIT_DIR}
    ]
    patch = yaml.safe_load(cfg["kubeadmConfigPatches"][-1])
    args = {a["name"]: a["value"] for a in patch["apiServer"]["extraArgs"]}
    assert args["audit-log-path"] == f"{kind_config.AUDIT_DIR}/audit.log"
    assert "extraMounts" not in kind_config.render_kind_config("worker", v)["nodes"][0]
    rules = kind_config.audit_policy()["rules"]
    kueue = [r for r in rules if r.get("users")]
    assert kueue == [
        {"level": "None", "users": ["system:serviceaccount:kueue-system:kueue-controller-manager"]}
    ]
    # Kueue's workload writes are still logged: the rule comes after them
    assert rules.index(kueue[0]) == 2 and rules[0]["verbs"][0] == "create"


class Obj:
    """A kubernetes client model, as attributes."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def pod(name: str, ready: bool = True, restarts: int = 0) -> Obj:
    status = Obj(
        name="manager", ready=ready, started=ready, restart_count=restarts,
        state=Obj(waiting=None), container_id=f"containerd://{name}",
    )  # fmt: skip
    return Obj(
        metadata=Obj(name=name, deletion_timestamp=None),
        spec=Obj(node_name=None),
        status=Obj(phase="Running", container_statuses=[status], init_container_statuses=[]),
    )


class Cluster:
    """The manager as a DeploymentRunner sees it: the Deployment's Pods, its scale."""

    def __init__(self, *names: str) -> None:
        self.pods = {n: pod(n) for n in names}
        self.calls: list[tuple[Any, ...]] = []

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> Obj:
        return Obj(items=list(self.pods.values()))

    def read_namespaced_pod(self, name: str, namespace: str) -> Obj:
        from kubernetes.client.rest import ApiException

        if name not in self.pods:
            raise ApiException(status=404)
        return self.pods[name]

    def patch_namespaced_pod(self, name: str, namespace: str, body: dict) -> None:
        self.calls.append(("annotate", name, body["metadata"]["annotations"]))

    def delete_namespaced_pod(self, name: str, namespace: str, grace_period_seconds: int) -> None:
        self.calls.append(("delete", name, grace_period_seconds))
        self.pods.pop(name)

    def patch_namespaced_deployment_scale(self, name: str, namespace: str, body: dict, **_: Any):
        self.calls.append(("scale", body["spec"]["replicas"]))

    def read_namespaced_pod_log(self, name: str, namespace: str, **kw: Any) -> str:
        return f"log of {name}\n"


def runner_on(cluster: Cluster, tmp_path: Path) -> deployrun.DeploymentRunner:
    from harness.cluster.procs import Supervisor

    profile = load_profile(vendor_profile(tmp_path, replicas=2))
    runner = deployrun.DeploymentRunner.__new__(deployrun.DeploymentRunner)
    assert profile.run is not None
    runner.profile, runner.run = profile, profile.run
    (tmp_path / "run").mkdir()
    runner.supervisor = Supervisor(tmp_path / "run")
    runner.core = runner.apps = cluster  # type: ignore[assignment]
    runner.name, runner.namespace, runner.selector = "example-dispatcher", "kueue-system", "a=b"
    runner.slots, runner.history, runner.down, runner.logs = {}, {}, set(), {}
    runner.progress = lambda msg: None
    return runner


def test_a_killed_pod_stays_down_until_its_replica_restarts_as_a_new_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deployrun, "SETTLE_SECONDS", 0.0)
    cluster = Cluster("d-b", "d-a")
    runner = runner_on(cluster, tmp_path)
    runner.wait_started()
    assert runner.slots == {0: "d-a", 1: "d-b"}
    runner.kill(1)
    assert cluster.calls == [
        ("annotate", "d-b", {deployrun.DELETION_COST: "-2147483648"}),
        ("scale", 1),
        ("delete", "d-b", 0),
    ]
    assert not runner.alive(1) and runner.alive(0)
    cluster.pods["d-c"] = pod("d-c")  # the ReplicaSet's new Pod once scaled back
    runner.restart(1)
    assert cluster.calls[-1] == ("scale", 2)
    assert runner.slots[1] == "d-c" and runner.alive(1)
    assert runner.replica_of(f"{ACCOUNT} (pod d-b)") == 1  # an earlier Pod of it
    log = (tmp_path / "run" / "logs" / "dispatcher-1.log").read_text()
    assert "--- pod d-b container manager (current)\nlog of d-b" in log


def test_a_container_restarted_at_start_fails_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.orchestrate.dispatcher import StartFailure

    monkeypatch.setattr(deployrun, "SETTLE_SECONDS", 0.0)
    cluster = Cluster("d-a", "d-b")
    cluster.pods["d-b"] = pod("d-b", restarts=1)
    runner = runner_on(cluster, tmp_path)
    with pytest.raises(StartFailure, match=r"pod d-b, container manager: restarted 1 time"):
        runner.wait_started()


def test_the_plan_on_kind_says_the_folder_is_applied_as_written() -> None:
    from harness import suite
    from harness.orchestrate import explain

    profile = load_profile(ROOT / "dispatchers/profiles/example-go-deploy-ha.yaml")
    catalogue = suite.load().catalogue
    on_kind = "\n".join(explain.plan(profile, ["w1"], catalogue, "kind"))
    assert "the folder's ServiceAccount example-dispatcher" in on_kind
    assert "applied to the manager as written (server-side): ConfigMap" in on_kind
    assert "livenessProbe" not in on_kind and "baseline role" not in on_kind
    local = "\n".join(explain.plan(profile, ["w1"], catalogue))
    assert "(example-dispatcher-0, example-dispatcher-1, ...)" in local  # one per replica
    assert "confined as a container" in local and "confined" not in on_kind


def test_a_pods_env_on_the_cluster_gets_the_placeholders_it_can_have(tmp_path: Path) -> None:
    run = run_of(
        vendor_profile(
            tmp_path,
            withoutContainers=["gcp-auth-plugin-init"],
            env={"LEASE_NAMESPACE": "{namespace}", "NAME": "{dispatcher_name}"},
        )
    )
    docs = deployrun.documents(run, (), {}, pull_never=False, dispatcher_name="example.com/d")
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    env = {
        e["name"]: e.get("value")
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert (env["LEASE_NAMESPACE"], env["NAME"]) == ("kueue-system", "example.com/d")
    for host in ("{kubeconfig}", "{profile_dir}/settings.yaml"):
        run = dataclasses.replace(run, env={"FILE": host})
        with pytest.raises(UserError, match=r"^spec.run.env.FILE: \{.*\} names a file on this"):
            deployrun.documents(run, (), {}, pull_never=False, dispatcher_name="d")
