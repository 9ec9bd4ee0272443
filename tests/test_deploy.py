"""A vendor's deploy folder read as the local provider runs it: rules bound to the
Deployment's account, env as the kubelet builds it, volumes as files, and every field not
honoured named in one line."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
import yaml

from harness.cluster import sandbox
from harness.cluster.probes import Probe
from harness.errors import UserError
from harness.orchestrate.dispatcher import downward_api, volumes
from harness.orchestrate.options import Options
from harness.orchestrate.plan import plan
from harness.profile import deploy, load_profile

EXAMPLE = Path(__file__).resolve().parents[1] / "dispatchers" / "example-go" / "deploy"
PROFILES = Path(__file__).resolve().parents[1] / "dispatchers" / "profiles"


def folder(tmp_path: Path, *docs: dict) -> Path:
    where = tmp_path / "deploy"
    where.mkdir(exist_ok=True)
    (where / "all.yaml").write_text(yaml.safe_dump_all(docs))
    return where


def deployment(container: dict, **pod: object) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "vendor-system"},
        "spec": {
            "replicas": 2,
            "template": {"spec": {"serviceAccountName": "sa", "containers": [container], **pod}},
        },
    }


CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "vendor-system"},
    "data": {"mode": "fast", "settings.yaml": "a: 1\n"},
}
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "token"},
    "data": {"value": base64.b64encode(b"s3cret").decode()},
}


def test_the_example_folder_as_the_local_provider_runs_it() -> None:
    read = deploy.read([str(EXAMPLE)], EXAMPLE, "kueue-system")
    pod = read.pod
    assert (pod.deployment, pod.container, pod.replicas) == ("example-dispatcher", "manager", 1)
    assert pod.command == ("/manager",)
    assert pod.env == {"DISPATCHER_CONFIG": "/etc/dispatcher/settings.yaml"}
    assert pod.pod_fields == {"POD_NAMESPACE": "metadata.namespace"}
    [mount] = pod.mounts
    assert (
        mount.path == "/etc/dispatcher"
        and b'metricsBindAddress: ":8080"' in (mount.files["settings.yaml"])
    )
    assert any("leases" in r["resources"] for r in read.namespace_rules)
    assert any("workloads/status" in r["resources"] for r in read.cluster_rules)
    assert [d["kind"] for d in read.objects.manager] == ["ConfigMap"]
    assert read.notes == ()  # every field of it is applied
    assert pod.liveness == Probe("httpGet", port=8081, path="/healthz")
    assert pod.readiness is None and pod.restart_policy == "Always"
    assert pod.resources.requests == {"cpu": 0.1, "memory": 64 * 2**20}
    assert pod.service_account == "example-dispatcher" and pod.run_as_user is None


def test_probes_users_and_resources_as_a_kubelet_reads_them(tmp_path: Path) -> None:
    container = {
        "name": "c",
        "command": ["/bin/run"],
        "ports": [{"name": "health", "containerPort": 8081}],
        "readinessProbe": {
            "exec": {"command": ["cat", "/tmp/ready"]},
            "periodSeconds": 2,
            "failureThreshold": 5,
        },
        "livenessProbe": {"tcpSocket": {"port": "health"}, "initialDelaySeconds": 15},
        "securityContext": {"runAsUser": 1000, "readOnlyRootFilesystem": True},
        "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
    }
    spec = deployment(container)
    spec["spec"]["template"]["spec"]["securityContext"] = {"runAsGroup": 3000}
    read = deploy.read([str(folder(tmp_path, spec, CONFIG, SECRET))], tmp_path, "ns")
    pod = read.pod
    assert pod.readiness == Probe(
        "exec", command=("cat", "/tmp/ready"), period=2, failure_threshold=5
    )
    assert pod.liveness == Probe("tcpSocket", port=8081, initial_delay=15)
    assert (pod.run_as_user, pod.run_as_group) == (1000, 3000)
    assert pod.resources.limits == {"cpu": 0.5, "memory": 2**30}
    assert "container c: securityContext.readOnlyRootFilesystem is not applied here" in (read.notes)


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        ({"httpGet": {"port": "nope"}}, "port 'nope' is not a port of the container"),
        ({"periodSeconds": 3}, "needs exactly one of httpGet, tcpSocket, exec"),
        ({"exec": {}}, "exec needs a command"),
        ({"tcpSocket": {"port": 1}, "periodSeconds": "x"}, "periodSeconds must be a number"),
    ],
)
def test_a_broken_probe_is_one_line_naming_it(tmp_path: Path, probe: dict, said: str) -> None:
    container = {"name": "c", "command": ["/bin/run"], "livenessProbe": probe}
    with pytest.raises(ValueError, match=f"container c: livenessProbe: {re.escape(said)}"):
        deploy.read([str(folder(tmp_path, deployment(container)))], tmp_path, "ns")


def test_env_as_the_kubelet_builds_it(tmp_path: Path) -> None:
    container = {
        "name": "c",
        "command": ["/bin/run", "--mode=$(MODE)", "$$(KEPT)"],
        "args": ["--token", "$(TOKEN)", "--missing=$(NOPE)"],
        "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
        "env": [
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "token", "key": "value"}}},
            {"name": "URL", "value": "http://x/$(MODE)"},
            {"name": "ME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {
                "name": "OPT",
                "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": True}},
            },
        ],
    }
    read = deploy.read(
        [str(folder(tmp_path, deployment(container), CONFIG, SECRET))], tmp_path, "ns"
    )
    pod = read.pod
    assert pod.command == ("/bin/run", "--mode=fast", "$(KEPT)")
    assert pod.args == ("--token", "s3cret", "--missing=$(NOPE)")
    assert pod.env["CFG_mode"] == "fast" and pod.env["URL"] == "http://x/fast"
    assert "OPT" not in pod.env
    assert pod.pod_fields == {"ME": "metadata.name"}
    assert downward_api(pod.pod_fields, "dispatcher-1", 1, "vendor") == {"ME": "dispatcher-1"}
    assert (
        "container c: env UID: fieldRef metadata.uid is not given here (variable left unset)"
        in (read.notes)
    )
    assert "container c: env CPU: resourceFieldRef is not given here (variable left unset)" in (
        read.notes
    )
    assert read.notes[0].startswith("namespace vendor-system: the dispatcher runs in ns")
    assert {d["metadata"].get("namespace") for d in read.objects.manager} == {"ns", None}


def test_rules_only_from_bindings_to_its_account(tmp_path: Path) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "vendor-system"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }
    cluster_role = {**role, "kind": "ClusterRole", "metadata": {"name": "cr"}}
    mine = {"kind": "ServiceAccount", "name": "sa", "namespace": "vendor-system"}
    other = {"kind": "ServiceAccount", "name": "someone-else", "namespace": "vendor-system"}

    def binding(kind: str, name: str, ref: str, ref_kind: str, subject: dict) -> dict:
        meta = {"name": name, **({"namespace": "vendor-system"} if kind == "RoleBinding" else {})}
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": meta,
            "roleRef": {"kind": ref_kind, "name": ref},
            "subjects": [subject],
        }

    read = deploy.read(
        [
            str(
                folder(
                    tmp_path,
                    deployment({"name": "c", "command": ["/x"]}),
                    role,
                    cluster_role,
                    binding("RoleBinding", "rb", "r", "Role", mine),
                    binding("ClusterRoleBinding", "crb", "cr", "ClusterRole", mine),
                    binding("ClusterRoleBinding", "theirs", "cr", "ClusterRole", other),
                    binding("ClusterRoleBinding", "view", "view", "ClusterRole", mine),
                )
            )
        ],
        tmp_path,
        "vendor-system",
    )
    assert read.namespace_rules == tuple(role["rules"])
    assert read.cluster_rules == tuple(role["rules"])  # once: the other account's is not
    assert read.notes == (
        "ClusterRoleBinding view: ClusterRole view is not in the manifests; not granted",
    )


def test_volumes_are_files_where_the_container_expects_them(tmp_path: Path) -> None:
    container = {
        "name": "c",
        "command": ["/x"],
        "volumeMounts": [
            {"name": "cfg", "mountPath": "/etc/vendor"},
            {"name": "cfg", "mountPath": "/etc/other/config.yaml", "subPath": "settings.yaml"},
            {"name": "tok", "mountPath": "/var/run/vendor"},
            {"name": "scratch", "mountPath": "/tmp/work"},
            {"name": "host", "mountPath": "/host"},
        ],
    }
    pod_volumes = [
        {"name": "cfg", "configMap": {"name": "settings"}},
        {
            "name": "tok",
            "secret": {"secretName": "token", "items": [{"key": "value", "path": "t"}]},
        },
        {"name": "scratch", "emptyDir": {}},
        {"name": "host", "hostPath": {"path": "/"}},
    ]
    read = deploy.read(
        [str(folder(tmp_path, deployment(container, volumes=pod_volumes), CONFIG, SECRET))],
        tmp_path,
        "ns",
    )
    assert [m.path for m in read.pod.mounts] == [
        "/etc/vendor",
        "/etc/other/config.yaml",
        "/var/run/vendor",
        "/tmp/work",
    ]
    assert "container c: volumeMount host at /host: a hostPath volume is not mounted here" in (
        read.notes
    )
    binds = volumes(read.pod, tmp_path / "files", tmp_path / "scratch")
    assert (tmp_path / "files" / "cfg" / "settings.yaml").read_text() == "a: 1\n"
    assert (tmp_path / "files" / "tok" / "t").read_bytes() == b"s3cret"
    assert (tmp_path / "scratch" / "emptydir-scratch").is_dir()  # the replica's own
    assert (tmp_path / "files" / "cfg" / "settings.yaml", "/etc/other/config.yaml") in binds
    box = sandbox.Sandbox(user=None, hidden=(Path("/tmp"),), needed=())
    setup = sandbox.setup(box, tmp_path / "scratch", binds)
    assert (
        f"mount --bind {tmp_path / 'files' / 'cfg' / 'settings.yaml'} /etc/other/config.yaml"
        in (setup)
    )
    stage = tmp_path / "scratch" / "hidden-0"  # under the private /tmp: made in it, moved with it
    assert f"mount --bind {tmp_path / 'scratch' / 'emptydir-scratch'} {stage / 'work'}" in setup


@pytest.mark.parametrize(
    ("docs", "problem"),
    [
        ((), "needs exactly one Deployment (the dispatcher), found none"),
        (
            (
                deployment(
                    {
                        "name": "c",
                        "env": [
                            {
                                "name": "X",
                                "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}},
                            }
                        ],
                    }
                ),
            ),
            "container c: env X: ConfigMap nope is not in the manifests",
        ),
        (
            (deployment({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}),),
            "container c: volumeMount v at /v: no volume of that name",
        ),
    ],
)
def test_what_cannot_run_is_said(tmp_path: Path, docs: tuple, problem: str) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "x.yaml").write_text(yaml.safe_dump_all(docs) if docs else "")
    with pytest.raises(ValueError) as raised:
        deploy.read([str(tmp_path / "deploy")], tmp_path, "ns")
    assert problem in str(raised.value)


def test_a_profile_of_a_deploy_folder() -> None:
    profile = load_profile(PROFILES / "example-go-deploy-ha.yaml")
    run = profile.run
    assert run is not None and run.deploy is not None
    assert run.command == ("{binary}",) and run.replicas == 2
    assert run.env == {"DISPATCHER_CONFIG": "/etc/dispatcher/settings.yaml"}
    assert run.rbac.namespace_rules and run.rbac.cluster_rules


@pytest.mark.parametrize(
    ("run", "problem"),
    [
        (
            {"manifests": str(EXAMPLE), "command": ["/x"]},
            "spec.run.command: the Deployment in spec.run.manifests says how the dispatcher runs",
        ),
        ({"manifests": "nowhere"}, "spec.run.manifests: nowhere: no such file or folder"),
    ],
)
def test_bad_deploy_profiles_are_one_line(tmp_path: Path, run: dict, problem: str) -> None:
    doc = yaml.safe_load((PROFILES / "example-go-deploy.yaml").read_text())
    doc["spec"]["run"] = run
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError) as raised:
        load_profile(tmp_path / "p.yaml")
    assert problem in str(raised.value)


def test_a_container_command_not_on_this_machine_runs_on_kind_not_locally(
    tmp_path: Path,
) -> None:
    """Without goBuild the image is the vendor's: kind and existing clusters run it, the
    local provider would run its command here, and says it cannot, in one line."""
    doc = yaml.safe_load((PROFILES / "example-go-deploy.yaml").read_text())
    doc["spec"]["run"] = {"manifests": str(EXAMPLE)}  # no goBuild: /manager is the image's
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    profile = load_profile(tmp_path / "p.yaml")  # a valid profile: kind runs its image
    assert profile.run is not None and profile.run.host_problem is not None
    assert profile.run.host_problem.endswith(
        "spec.run.manifests: executable '/manager' not found on PATH or as a path"
    )
    with pytest.raises(UserError) as raised:
        plan(Options(profile=str(tmp_path / "p.yaml"), provider="local"))
    assert str(raised.value).endswith(
        "(the local provider runs the container's command on this machine: give"
        " spec.run.goBuild, or run the folder's image on --provider kind)"
    )
