"""The kind provider's plan: every command it would run and every manifest it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.cluster import kueue_install, rundir, upstream, versions
from harness.cluster.environment import Environment
from harness.errors import UserError
from harness.providers import kind, kind_commands, kind_config, kind_node
from harness.providers.kind import KindProvider
from harness.providers.kind_commands import Cmd, KindCluster, Result

V = versions.select("0.19.2")
V17 = versions.select("0.17.1")
DISPATCHER = "mkdc.example/reference"


def kind_kubeconfig(name: str, internal: bool) -> str:
    server = f"https://{name}-control-plane:6443" if internal else "https://127.0.0.1:41234"
    ctx = f"kind-{name}"
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": ctx, "cluster": {"server": server, "certificate-authority-data": "Q0E="}}
            ],
            "users": [
                {
                    "name": ctx,
                    "user": {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"},
                }
            ],
            "contexts": [{"name": ctx, "context": {"cluster": ctx, "user": ctx}}],
            "current-context": ctx,
        }
    )


NODE_ADDRESS = "172.18.0.3"


class FakeRunner:
    """Records each command; answers kind/docker queries; fails what `fail` matches."""

    def __init__(self, existing: tuple[str, ...] = (), fail: dict[str, int] | None = None):
        self.cmds: list[Cmd] = []
        self.existing = list(existing)
        self.fail = dict(fail or {})  # argv substring -> times to fail (-1: always)
        self.docker_up = True

    def __call__(self, cmd: Cmd) -> Result:
        self.cmds.append(cmd)
        line = " ".join(cmd.argv)
        for needle, times in self.fail.items():
            if needle in line and times != 0:
                self.fail[needle] = times - 1
                return Result(1, "", f"error: {needle} went wrong\n")
        if cmd.argv[:2] == ("docker", "info"):
            return Result(0, "27.0.1\n") if self.docker_up else Result(1, "", docker_down())
        if cmd.argv[:3] == ("kind", "get", "clusters"):
            return Result(0, "".join(f"{n}\n" for n in self.existing))
        if cmd.argv[:3] == ("kind", "get", "kubeconfig"):
            return Result(0, kind_kubeconfig(cmd.argv[-1], "--internal" in cmd.argv))
        if cmd.argv[:2] == ("docker", "inspect"):
            return Result(0, f"{NODE_ADDRESS}\n")
        return Result(0, "")

    def lines(self) -> list[str]:
        return [" ".join(c.argv) for c in self.cmds]


def docker_down() -> str:
    return "Client: ...\nCannot connect to the Docker daemon at unix:///var/run/docker.sock\n"


@pytest.fixture
def manifests(tmp_path: Path) -> upstream.Manifests:
    """A stand-in for the module cache: the files the kind provider reads."""
    root = tmp_path / "modcache"
    kueue_cfg = root / "kueue/config/components/manager/controller_manager_config.yaml"
    kueue_cfg.parent.mkdir(parents=True)
    kueue_cfg.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "health: {healthProbeBindAddress: ':8081'}\nmetrics: {bindAddress: ':8443'}\n"
        "webhook: {port: 9443}\n"
        "leaderElection: {leaderElect: true, resourceName: c1f6bfd2.kueue.x-k8s.io}\n"
        "controller: {groupKindConcurrency: {Job.batch: 5}}\n"
        "integrations: {frameworks: [batch/job, pod, deployment]}\n"
    )
    stages = root / "kwok/kustomize/stage"
    files = {
        "node/fast/node-initialize.yaml": "kind: Stage\nmetadata: {name: node-initialize}\n",
        "pod/fast/pod-ready.yaml": "kind: Stage\nmetadata: {name: pod-ready}\n",
        "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml": (
            "kind: Stage\nmetadata: {name: node-heartbeat-with-lease}\n"
        ),
    }
    for rel, text in files.items():
        (stages / rel).parent.mkdir(parents=True, exist_ok=True)
        (stages / rel).write_text(text)
    crd = root / "autoscaler/provisioningrequests.yaml"
    crd.parent.mkdir(parents=True)
    crd.write_text("kind: CustomResourceDefinition\n")
    return upstream.Manifests(
        kueue_crds=root / "kueue/crds",
        kueue_webhooks=root / "kueue/webhooks.yaml",
        kueue_dir=root / "kueue",
        provisioning_request_crd=crd,
        kwok_stages=[stages / "node/fast/node-initialize.yaml", stages / "pod/fast/pod-ready.yaml"],
    )


class RecordingProvider(KindProvider):
    """The provider, keeping what it wired and how long it slept."""

    wired: list[Environment]
    sleeps: list[float]


def make(manifests, runner=None, *, tools=("kind", "docker", "kubectl"), **kw) -> RecordingProvider:
    wired: list[Environment] = []
    sleeps: list[float] = []
    p = RecordingProvider(
        kw.pop("v", V),
        workers=kw.pop("workers", 2),
        dispatcher_name=DISPATCHER,
        kueue_extra={"featureGates": {"MultiKueueBatchJobWithManagedBy": True}},
        runner=runner or FakeRunner(),
        which=lambda t: f"/usr/bin/{t}" if t in tools else None,
        manifests=lambda v: manifests,
        wire=wired.append,
        sleep=sleeps.append,
        parallel=kw.pop("parallel", False),
        images=kw.pop("images", "release"),
        cgroup_v1=kw.pop("cgroup_v1", False),
        inotify=kw.pop("inotify", None),
        name_prefix=kw.pop("name_prefix", "mkdc"),
        **kw,
    )
    p.wired, p.sleeps = wired, sleeps
    return p


# ------------------------------------------------------------- pure planning


@pytest.mark.parametrize("role", ["manager", "worker"])
@pytest.mark.parametrize("v", [V, V17])
def test_kind_configs_pin_the_node_image(role, v):
    cfg = kind_config.render_kind_config(role, v)
    assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert [n["image"] for n in cfg["nodes"]] == [f"kindest/node:v{v.kubernetes}"]
    assert cfg["networking"]["apiServerAddress"] == "127.0.0.1"


def test_missing_kind_config_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="kind config .*manager.yaml is missing"):
        kind_config.render_kind_config("manager", V, tmp_path)


def test_kueue_configuration_keeps_release_defaults(manifests):
    defaults = kueue_install.release_defaults(manifests)
    cfg = kind_config.kueue_configuration(
        defaults,
        kueue_version="0.19.2",
        manager=True,
        dispatcher_name=DISPATCHER,
        extra={
            "featureGates": {"WorkloadRequestUseMergePatch": True},
            "multiKueue": {"incrementalDispatcherConfig": {"stepSize": 2}},
        },
    )
    assert cfg["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert cfg["namespace"] == "kueue-system"
    assert cfg["leaderElection"] == {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"}
    assert cfg["internalCertManagement"] == {"enable": True}
    assert cfg["integrations"]["frameworks"] == ["batch/job"]
    assert cfg["webhook"] == {"port": 9443} and cfg["metrics"] == {"bindAddress": ":8443"}
    assert cfg["controller"] == {"groupKindConcurrency": {"Job.batch": 5}}
    assert cfg["featureGates"] == {"WorkloadRequestUseMergePatch": True}
    assert cfg["multiKueue"]["dispatcherName"] == DISPATCHER
    assert cfg["multiKueue"]["incrementalDispatcherConfig"] == {"stepSize": 2}
    assert defaults["integrations"]["frameworks"] == ["batch/job", "pod", "deployment"]
    worker = kind_config.kueue_configuration(defaults, kueue_version="0.19.2", manager=False)
    assert "multiKueue" not in worker and worker["leaderElection"]["leaderElect"] is True


def test_kueue_configuration_from_the_real_release():
    try:
        man = upstream.manifests(V)
    except UserError as exc:
        pytest.skip(f"module cache unavailable: {exc}")
    cfg = kind_config.kueue_configuration(
        kueue_install.release_defaults(man),
        kueue_version=V.kueue,
        manager=True,
        dispatcher_name="d/x",
    )
    assert cfg["leaderElection"]["leaderElect"] is True
    assert cfg["internalCertManagement"]["enable"] is True
    assert cfg["integrations"]["frameworks"] == ["batch/job"]
    assert cfg["health"]["healthProbeBindAddress"] == ":8081"
    assert cfg["multiKueue"]["dispatcherName"] == "d/x"


def test_config_map_carries_config_and_version():
    cm = kueue_install.manager_config_map(
        {"kind": "Configuration", "multiKueue": {"dispatcherName": "d"}}, "0.19.2"
    )
    assert cm["metadata"] == {
        "name": "kueue-manager-config",
        "namespace": "kueue-system",
        "labels": {"app.kubernetes.io/version": "v0.19.2"},
    }
    cfg = yaml.safe_load(cm["data"][kueue_install.CONFIG_KEY])
    assert cfg["multiKueue"]["dispatcherName"] == "d"


def test_config_hash_changes_only_with_the_config():
    a = kind_config.config_hash({"a": 1, "b": {"c": 2}})
    assert a == kind_config.config_hash({"b": {"c": 2}, "a": 1})
    assert a != kind_config.config_hash({"a": 2, "b": {"c": 2}})


def test_worker_kubeconfig_internal_for_kueue_external_for_us():
    ext = yaml.safe_load(kind_kubeconfig("mkdc-worker1", internal=False))
    internal = yaml.safe_load(kind_kubeconfig("mkdc-worker1", internal=True))
    kc = kind_config.merged_kubeconfig("internal", {"external": ext, "internal": internal})
    assert kc["current-context"] == "internal"
    servers = {c["name"]: c["cluster"]["server"] for c in kc["clusters"]}
    assert servers == {
        "external": "https://127.0.0.1:41234",
        "internal": "https://mkdc-worker1-control-plane:6443",
    }
    assert {c["name"]: c["context"] for c in kc["contexts"]} == {
        "external": {"cluster": "external", "user": "external"},
        "internal": {"cluster": "internal", "user": "internal"},
    }
    for user in kc["users"]:  # Kueue rejects file paths: credentials must be embedded
        assert set(user["user"]) == {"client-certificate-data", "client-key-data"}


def test_install_plan_for_a_worker(tmp_path, manifests):
    c = KindCluster("worker1", "mkdc-worker1", "worker", tmp_path)
    cfg = {"kind": "Configuration", "x": 1}
    nodes = [{"kind": "Node", "metadata": {"name": "n1"}}]
    plan = kind_commands.install_plan(c, V, manifests, cfg, nodes)
    k = f"kubectl --kubeconfig {tmp_path}/worker1.kubeconfig --context external"
    apply = f"{k} apply --server-side --force-conflicts"
    pinned = json.dumps(kind_config.pin_patch(kind_config.config_hash(cfg)), sort_keys=True)
    kwok_pinned = json.dumps(kind_config.pin_patch(), sort_keys=True)
    taint = "node-role.kubernetes.io/control-plane=:NoSchedule"
    assert [" ".join(cmd.argv) for cmd in plan] == [
        f"{apply} -f https://github.com/kubernetes-sigs/kueue/releases/download/v0.19.2/manifests.yaml",
        f"{apply} -f {manifests.provisioning_request_crd}",
        f"{apply} -f https://github.com/kubernetes-sigs/kwok/releases/download/v0.8.0/kwok.yaml",
        f"{k} wait --for=condition=Established crd --all --timeout=120s",
        f"{apply} -f -",
        f"{apply} --field-manager=mkdc -f -",
        f"{k} taint node mkdc-worker1-control-plane {taint} --overwrite",
        f"{k} -n kueue-system patch deployment kueue-controller-manager -p {pinned}",
        f"{k} -n kube-system patch deployment kwok-controller -p {kwok_pinned}",
        f"{k} -n kueue-system rollout status --timeout=300s deployment/kueue-controller-manager",
        f"{k} -n kube-system rollout status --timeout=300s deployment/kwok-controller",
        f"{apply} -f -",
        f"{k} wait --for=condition=Ready node -l type=kwok --timeout=120s",
        f"{k} -n kube-system rollout status --timeout=300s deployment/coredns",
        f"{k} create --dry-run=server -o name -f -",
    ]
    stages = [d["metadata"]["name"] for d in yaml.safe_load_all(plan[4].stdin or "")]
    assert stages == ["node-initialize", "pod-ready", "node-heartbeat-with-lease"]
    cm = yaml.safe_load(plan[5].stdin or "")
    assert cm["kind"] == "ConfigMap" and yaml.safe_load(cm["data"][kueue_install.CONFIG_KEY]) == cfg
    assert list(yaml.safe_load_all(plan[11].stdin or "")) == nodes
    assert plan[-1].attempts > 1 and "ClusterQueue" in (plan[-1].stdin or "")


def test_install_plan_for_the_manager_has_no_kwok_and_no_taint(tmp_path, manifests):
    c = KindCluster("manager", "mkdc-manager", "manager", tmp_path)
    lines = [" ".join(cmd.argv) for cmd in kind_commands.install_plan(c, V, manifests, {"a": 1})]
    assert len(lines) == 8
    assert not [line for line in lines if "kwok" in line or " taint " in line]
    assert any("patch deployment kueue-controller-manager" in line for line in lines)
    assert any("rollout status --timeout=300s deployment/coredns" in line for line in lines)


def test_pin_patch_keeps_kueue_and_kwok_on_the_real_node():
    spec = kind_config.pin_patch("abc")["spec"]["template"]
    assert spec["metadata"]["annotations"] == {kind_config.HASH_ANNOTATION: "abc"}
    assert spec["spec"]["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert spec["spec"]["tolerations"][0]["effect"] == "NoSchedule"
    assert "metadata" not in kind_config.pin_patch()["spec"]["template"]


# ----------------------------------------------------------------- executor


def test_up_in_ci_mode_creates_installs_wires_and_down_deletes(manifests):
    runner = FakeRunner()
    p = make(manifests, runner)
    env = p.up()
    lines = runner.lines()
    assert lines[:2] == ["docker info --format {{.ServerVersion}}", "kind get clusters"]
    creates = [c for c in runner.cmds if c.argv[:3] == ("kind", "create", "cluster")]
    assert [c.argv[4] for c in creates] == ["mkdc-manager", "mkdc-worker1", "mkdc-worker2"]
    for c in creates:
        argv = list(c.argv)
        assert argv[argv.index("--kubeconfig") + 1].startswith(str(env.run_dir))
        rendered = yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text())
        assert rendered["nodes"][0]["image"] == "kindest/node:v1.36.2"
    assert "kind get kubeconfig --internal --name mkdc-worker1" in lines
    assert "kind get kubeconfig --internal --name mkdc-manager" not in lines
    # the manager's Kueue gets the profile's dispatcher and extra; workers neither
    cms = [yaml.safe_load(c.stdin or "") for c in runner.cmds if "--field-manager=mkdc" in c.argv]
    configs = [yaml.safe_load(cm["data"][kueue_install.CONFIG_KEY]) for cm in cms]
    assert configs[0]["multiKueue"]["dispatcherName"] == DISPATCHER
    assert configs[0]["featureGates"] == {"MultiKueueBatchJobWithManagedBy": True}
    assert all("multiKueue" not in cfg and "featureGates" not in cfg for cfg in configs[1:])
    assert len([line for line in lines if "create --dry-run=server" in line]) == 3
    # the environment handed to the wiring and the suite
    assert p.wired == [env]
    assert env.provider == "kind" and env.kueue_version == "v0.19.2"
    assert [w.name for w in env.workers] == ["worker1", "worker2"]
    assert {c.context for c in env.clusters} == {"external"}
    assert env.info["workerSecrets"] == {
        "worker1": "multikueue-worker1",
        "worker2": "multikueue-worker2",
    }
    assert env.info["kindClusters"]["worker2"] == "mkdc-worker2"
    worker_kc = yaml.safe_load(env.worker("worker1").kubeconfig.read_text())
    assert worker_kc["current-context"] == "internal"
    servers = {c["name"]: c["cluster"]["server"] for c in worker_kc["clusters"]}
    assert servers["internal"] == f"https://{NODE_ADDRESS}:6443"  # no DNS name needed
    cleanup = json.loads((env.run_dir / rundir.CLEANUP_FILE).read_text())
    assert [c[-1] for c in cleanup] == ["mkdc-manager", "mkdc-worker1", "mkdc-worker2"]
    assert yaml.safe_load(env.manager.kubeconfig.read_text())["current-context"] == "external"
    assert (env.run_dir / "environment.json").exists()
    runner.cmds.clear()
    p.down()
    assert runner.lines() == [
        "kind delete cluster --name mkdc-worker2",
        "kind delete cluster --name mkdc-worker1",
        "kind delete cluster --name mkdc-manager",
    ]
    assert not env.run_dir.exists()


def test_up_in_parallel_runs_the_same_commands(manifests):
    seen = []
    for parallel in (False, True):
        runner = FakeRunner()
        p = make(manifests, runner, parallel=parallel)
        env = p.up()
        p.down()
        seen.append(sorted(line.replace(str(env.run_dir), "RUN") for line in runner.lines()))
    assert seen[0] == seen[1]


def test_ci_mode_refuses_clusters_that_already_exist(manifests):
    runner = FakeRunner(existing=("mkdc-worker1", "other"))
    p = make(manifests, runner)
    with pytest.raises(UserError, match="kind cluster.* mkdc-worker1 already exist.*dev mode"):
        p.up()
    assert not [line for line in runner.lines() if "create" in line or "delete" in line]
    assert p.run_dir is not None and not p.run_dir.exists()


def test_dev_mode_reuses_clusters_and_keeps_them(manifests):
    runner = FakeRunner(existing=("mkdc-manager", "mkdc-worker1"))
    p = make(manifests, runner, mode="dev")
    env = p.up()
    creates = [line for line in runner.lines() if line.startswith("kind create")]
    assert len(creates) == 1 and "--name mkdc-worker2" in creates[0]
    # reused clusters still get (idempotent) installs: same config, same hash, no restart
    installs = [
        line for line in runner.lines() if "patch deployment kueue-controller-manager" in line
    ]
    assert len(installs) == 3
    assert env.info["kindMode"] == "dev"
    runner.cmds.clear()
    p.down()
    assert runner.cmds == []
    assert not env.run_dir.exists()


def test_name_prefix_names_the_kind_clusters(manifests):
    runner = FakeRunner()
    p = make(manifests, runner, name_prefix="ci-42", workers=1)
    p.up()
    p.down()
    assert [c.argv[4] for c in runner.cmds if c.argv[1] == "create"] == [
        "ci-42-manager",
        "ci-42-worker1",
    ]


@pytest.mark.parametrize("tool", ["kind", "docker", "kubectl"])
def test_missing_tool(manifests, tool):
    runner = FakeRunner()
    tools = tuple(t for t in ("kind", "docker", "kubectl") if t != tool)
    with pytest.raises(UserError, match=f"^{tool} is not on PATH: install .*--provider local") as e:
        make(manifests, runner, tools=tools).up()
    assert "\n" not in str(e.value)
    asked = [c.argv[:2] for c in runner.cmds]  # the engine, before kind and kubectl
    assert asked == ([] if tool == "docker" else [("docker", "info")])


def test_docker_engine_not_answering(manifests):
    runner = FakeRunner()
    runner.docker_up = False
    with pytest.raises(UserError, match="Docker engine does not answer .*Cannot connect") as e:
        make(manifests, runner).up()
    assert "\n" not in str(e.value)
    assert runner.lines() == ["docker info --format {{.ServerVersion}}"]


def test_a_rollout_that_never_finished_says_the_namespaces_last_warning(manifests):
    class WarningRunner(FakeRunner):
        def __call__(self, cmd: Cmd) -> Result:
            if "events" in cmd.argv:
                self.cmds.append(cmd)
                return Result(0, "kueue-1: FailedScheduling: 0/1 nodes are available\n")
            return super().__call__(cmd)

    runner = WarningRunner(fail={"rollout status": -1})
    p = make(manifests, runner, workers=1)
    msg = r"rollout status .* went wrong \(last warning: kueue-1: FailedScheduling: 0/1 nodes"
    with pytest.raises(UserError, match=msg):
        p.up()
    asked = [line for line in runner.lines() if " events " in line]
    assert asked and all(
        " -n kueue-system get events --field-selector=type=Warning" in a for a in asked
    )


def test_failure_midway_deletes_what_ci_mode_created(manifests):
    runner = FakeRunner(fail={"rollout status": -1})
    p = make(manifests, runner)
    msg = "`kubectl -n kueue-system rollout status .* failed: error: rollout status went wrong"
    with pytest.raises(UserError, match=msg):
        p.up()
    deletes = [line for line in runner.lines() if line.startswith("kind delete")]
    assert deletes == [
        f"kind delete cluster --name mkdc-{n}" for n in ("worker2", "worker1", "manager")
    ]
    assert p.wired == []


def test_failure_in_dev_mode_keeps_the_clusters(manifests):
    runner = FakeRunner(fail={"kind create": -1})
    p = make(manifests, runner, mode="dev")
    with pytest.raises(UserError, match="`kind create cluster --name mkdc-manager"):
        p.up()
    assert not [line for line in runner.lines() if line.startswith("kind delete")]


def test_webhook_probe_is_retried_until_kueue_answers(manifests):
    runner = FakeRunner(fail={"--dry-run=server": 2})
    p = make(manifests, runner, workers=1)
    p.up()
    p.down()
    assert p.sleeps == [2, 2]
    assert len([line for line in runner.lines() if "--dry-run=server" in line]) == 4


KUEUE_MANIFEST = "kueue/releases/download"


class BusyServer(FakeRunner):
    """The first `times` applies of Kueue's manifest meet an apiserver whose etcd is slow."""

    def __init__(self, times: int, stderr: str):
        super().__init__()
        self.times, self.stderr = times, stderr

    def __call__(self, cmd: Cmd) -> Result:
        if KUEUE_MANIFEST in " ".join(cmd.argv) and self.times:
            self.times -= 1
            self.cmds.append(cmd)
            return Result(1, "", self.stderr)
        return super().__call__(cmd)


def test_a_kubectl_command_the_server_was_too_busy_for_is_made_again(manifests):
    runner = BusyServer(2, "Error from server: etcdserver: request timed out\n")
    p = make(manifests, runner, workers=1)
    p.up()
    p.down()
    assert len([line for line in runner.lines() if KUEUE_MANIFEST in line]) == 2 + 2
    assert p.sleeps[:2] == [2, 4]


def test_a_refusal_is_not_made_again_and_the_busy_retries_end(manifests):
    refused = BusyServer(1, 'Error from server (Invalid): error when creating "x": invalid\n')
    with pytest.raises(UserError, match=r"failed: Error from server \(Invalid\)"):
        make(manifests, refused, workers=1).up()
    assert len([line for line in refused.lines() if KUEUE_MANIFEST in line]) == 1
    busy = BusyServer(99, "Error from server (ServiceUnavailable): etcd is busy\n")
    with pytest.raises(UserError, match="ServiceUnavailable"):
        make(manifests, busy, workers=1).up()
    assert (
        len([line for line in busy.lines() if KUEUE_MANIFEST in line])
        == kind_commands.TRANSIENT_ATTEMPTS
    )


def test_every_kind_cluster_runs_etcd_without_fsync():
    for role in ("manager", "worker"):
        patches = kind_config.render_kind_config(role, V, built=True)["kubeadmConfigPatches"]
        etcd = [yaml.safe_load(p) for p in patches if "extraArgs" in p]
        assert etcd[0]["etcd"]["local"]["extraArgs"] == [
            {"name": "unsafe-no-fsync", "value": "true"}
        ]


def test_bad_arguments():
    with pytest.raises(UserError, match="mode 'prod'"):
        KindProvider(V, mode="prod")
    with pytest.raises(UserError, match="--workers"):
        KindProvider(V, workers=0)
    with pytest.raises(UserError, match="name prefix 'My_Prefix'"):
        KindProvider(V, name_prefix="My_Prefix")
    assert KindProvider(V).capabilities == frozenset()


def test_down_tries_every_cluster_and_names_what_it_could_not_delete(manifests):
    runner = FakeRunner()
    p = make(manifests, runner)
    p.up()
    runner.fail = {"delete cluster --name mkdc-worker1": -1}
    with pytest.raises(UserError, match="could not delete kind cluster.* mkdc-worker1:"):
        p.down()
    assert len([line for line in runner.lines() if line.startswith("kind delete")]) == 3


def test_admission_policy_mode_installs_kueues_policy_on_the_manager_only(manifests):
    policy = manifests.kueue_dir / "config/components/map/manifests.yaml"
    policy.parent.mkdir(parents=True)
    policy.write_text("kind: MutatingAdmissionPolicy\n")
    runner = FakeRunner()
    p = make(manifests, runner)
    env = p.up()
    p.down()
    applied = [c for c in runner.cmds if c.argv[-1] == str(policy)]
    assert [c.argv[2] for c in applied] == [str(env.manager.kubeconfig)]
    assert env.nomination_write_mode == "admission-policy"


def test_a_write_mode_the_versions_cannot_do_fails_before_any_cluster(manifests):
    runner = FakeRunner()
    with pytest.raises(UserError, match="nominationWrites admission-policy: .*kubernetes v1.35.4"):
        make(manifests, runner, v=V17, write_mode="admission-policy").up()
    assert runner.lines() == ["docker info --format {{.ServerVersion}}"]


def test_merge_patch_mode_turns_on_kueues_gate_on_the_manager(manifests):
    runner = FakeRunner()
    p = make(manifests, runner, write_mode="merge-patch", workers=1)
    env = p.up()
    p.down()
    cms = [yaml.safe_load(c.stdin or "") for c in runner.cmds if "--field-manager=mkdc" in c.argv]
    manager_cfg = yaml.safe_load(cms[0]["data"][kueue_install.CONFIG_KEY])
    assert manager_cfg["featureGates"]["WorkloadRequestUseMergePatch"] is True
    assert env.nomination_write_mode == "merge-patch"


# ------------------------------------------------------- images built here
def fake_built(tmp_path: Path):
    def build(v, work, progress):
        kueue_yaml, kwok_yaml = work / "kueue.yaml", work / "kwok.yaml"
        kueue_yaml.write_text("kind: Deployment\n")
        kwok_yaml.write_text("kind: Deployment\n")
        return kind_node.Built(
            node_image="mkdc.local/kind-node:v1.36.3-abc",
            kueue_manifest=kueue_yaml,
            kwok_manifest=kwok_yaml,
            images=(tmp_path / "kueue.tar",),
            worker_images=(tmp_path / "kwok.tar",),
        )

    return build


def test_built_images_pin_the_node_load_the_archives_and_apply_rendered_manifests(
    tmp_path, manifests
):
    runner = FakeRunner()
    p = make(manifests, runner, images="built", build_images=fake_built(tmp_path), cgroup_v1=True)
    env = p.up()
    creates = [c for c in runner.cmds if c.argv[:3] == ("kind", "create", "cluster")]
    for c in creates:
        argv = list(c.argv)
        cfg = yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text())
        assert cfg["nodes"][0]["image"] == "mkdc.local/kind-node:v1.36.3-abc"
        assert cfg["networking"]["disableDefaultCNI"] is True
        patches = "\n".join(cfg["kubeadmConfigPatches"])
        assert "failCgroupV1: false" in patches and "addon/coredns" not in patches
        assert f"imageTag: {V.etcd}-0" in patches and f"imageTag: v{V.coredns}" in patches
    lines = runner.lines()
    loads = [line for line in lines if line.startswith("kind load image-archive")]
    assert sorted(loads) == sorted(
        [
            f"kind load image-archive {tmp_path}/kueue.tar --name mkdc-{n}"
            for n in ("manager", "worker1", "worker2")
        ]
        + [
            f"kind load image-archive {tmp_path}/kwok.tar --name mkdc-{n}"
            for n in ("worker1", "worker2")
        ]
    )
    applied = [c.argv[c.argv.index("-f") + 1] for c in runner.cmds if "-f" in c.argv]
    assert str(env.run_dir / "kueue.yaml") in applied
    assert not any("github.com" in a for a in applied)  # nothing from the internet
    p.down()


def test_auto_images_are_built_only_when_the_registry_is_out_of_reach(tmp_path, manifests):
    for answers, expected in ((True, "release"), (False, "built")):
        p = make(
            manifests,
            images="auto",
            build_images=fake_built(tmp_path),
            registry_answers=lambda answers=answers: answers,
        )
        p.up()
        assert p.images == expected
        assert (p.node_image is not None) == (expected == "built")
        p.down()


def test_release_images_keep_kinds_node_image_and_add_no_built_patches():
    cfg = kind_config.render_kind_config("worker", V, cgroup_v1=False)
    assert cfg["nodes"][0]["image"] == "kindest/node:v1.36.2"
    assert cfg.get("kubeadmConfigPatches") == [kind_config.ETCD_NO_FSYNC_PATCH]
    assert "disableDefaultCNI" not in cfg.get("networking", {})


def test_unknown_images_mode_is_one_line():
    with pytest.raises(UserError, match="kind images 'pulled' is not one of auto, built, release"):
        KindProvider(V, images="pulled")


def test_by_address_replaces_only_the_host():
    kc = {"clusters": [{"cluster": {"server": "https://mkdc-worker1-control-plane:6443"}}]}
    assert kind_config.by_address(kc, "172.18.0.9")["clusters"][0]["cluster"]["server"] == (
        "https://172.18.0.9:6443"
    )


def test_the_kind_network_goes_with_the_clusters_when_this_run_made_it(manifests):
    runner = FakeRunner(fail={"docker network inspect": -1})  # no kind network yet
    p = make(manifests, runner)
    env = p.up()
    assert ["docker", "network", "rm", "kind"] in json.loads(
        (env.run_dir / rundir.CLEANUP_FILE).read_text()
    )
    runner.cmds.clear()
    p.down()
    assert runner.lines()[-1] == "docker network rm kind"
    runner = FakeRunner()  # a network that was there before stays
    p = make(manifests, runner)
    p.up()
    runner.cmds.clear()
    p.down()
    assert "docker network rm kind" not in runner.lines()


def test_too_few_inotify_instances_for_the_clusters_is_one_line_with_the_sysctl(
    tmp_path, manifests
):
    (tmp_path / "max_user_instances").write_text("128\n")
    line = kind.inotify_too_low(5, tmp_path)
    assert line is not None and "max_user_instances is 128, 5 kind clusters need" in line
    assert "sysctl -w fs.inotify.max_user_instances=1024" in line
    assert kind.inotify_too_low(1, tmp_path) is None
    runner = FakeRunner()
    with pytest.raises(UserError, match="max_user_instances is 128"):
        make(manifests, runner, workers=4, inotify=tmp_path).up()
    assert runner.cmds == []  # before anything is created


def test_ci_runs_get_names_of_their_own_and_dev_keeps_the_shared_ones():
    first, second = KindProvider(V), KindProvider(V)
    assert first.prefix.startswith("mkdc-") and first.prefix != second.prefix
    assert KindProvider(V, mode="dev").prefix == "mkdc"


def test_kueue_logs_are_saved_into_the_run_directory_for_the_artifacts(manifests):
    runner = FakeRunner(fail={"logs deployment/kueue-controller-manager": 1})
    p = make(manifests, runner, workers=1)
    env = p.up()
    p.save_logs()
    logs = sorted(path.name for path in (env.run_dir / "logs").glob("*.log"))
    assert logs == ["manager-kueue.log", "worker1-kueue.log"]
    texts = [(env.run_dir / "logs" / name).read_text() for name in logs]
    assert texts[0].startswith("kubectl logs failed: error: logs deployment")  # said, not raised
    asked = [line for line in runner.lines() if " logs " in f" {line} "]
    assert all("-n kueue-system logs deployment/kueue-controller-manager" in a for a in asked)
    p.down()


def test_a_failed_kind_command_is_said_by_its_error_line_not_its_stack_trace():
    out = (
        "Creating cluster ...\n"
        "ERROR: failed to create cluster: failed to init node with kubeadm: exit status 1\n"
        "Command Output: I1202 kubeadm said a lot\n"
        "Stack Trace:\ngoroutine 1 [running]:\n\truntime/asm_amd64.s:1771\n"
    )
    assert kind._last_line(Result(1, "", out)).startswith("ERROR: failed to create cluster:")
    assert kind._last_line(Result(1, "", "one\ntwo\n")) == "two"
