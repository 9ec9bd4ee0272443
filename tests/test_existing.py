"""The existing provider: read-only checks, one clear line per problem, label-only cleanup."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes.dynamic import DynamicClient
from urllib3 import HTTPConnectionPool
from urllib3.exceptions import MaxRetryError

from harness.cluster import kueue_install
from harness.cluster.environment import Cluster
from harness.cluster.inventory import RUN_LABEL
from harness.cluster.multikueue import API
from harness.errors import UserError
from harness.providers import existing
from harness.providers.existing import ExistingProvider, image_version, parse_cluster_args
from tests.test_inventory import FakeDyn, obj

DISPATCHER = "mkdc.example/reference"


def crds() -> list[dict[str, Any]]:
    names = [*existing.KUEUE_CRDS, existing.PROVISIONING_CRD]
    return [obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", n) for n in names]


def deployment(image: str = "registry.k8s.io/kueue/kueue:v0.19.2") -> dict[str, Any]:
    containers = [{"name": "kube-rbac-proxy", "image": "quay.io/brancz/rbac:latest"}]
    containers.append({"name": "manager", "image": image})
    d = obj("apps/v1", "Deployment", existing.DEPLOYMENT, "kueue-system")
    d["spec"] = {"template": {"spec": {"containers": containers}}}
    return d


def config_map(dispatcher: str | None = DISPATCHER, version: str | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    if dispatcher:
        cfg["multiKueue"] = {"dispatcherName": dispatcher}
    cm = obj("v1", "ConfigMap", kueue_install.CONFIG_MAP, "kueue-system")
    cm["data"] = {kueue_install.CONFIG_KEY: yaml.safe_dump(cfg)}
    if version:
        cm["metadata"]["labels"] = {existing.VERSION_LABEL: version}
    return cm


def mk_cluster(name: str, active: str = "True", secret: str | None = None) -> dict[str, Any]:
    location = {"locationType": "Secret", "location": secret or f"{name}-secret"}
    c = obj(API, "MultiKueueCluster", name)
    c["spec"] = {"clusterSource": {"kubeConfig": location}}
    c["status"] = {"conditions": [{"type": "Active", "status": active, "message": "boom"}]}
    return c


def manager_objects() -> list[dict[str, Any]]:
    return [
        *crds(),
        deployment(),
        config_map(),
        mk_cluster("w1"),
        mk_cluster("w2", secret="shared"),
    ]


def worker_objects() -> list[dict[str, Any]]:
    return [*crds(), deployment()]


@pytest.fixture
def kubeconfigs(tmp_path: Path) -> dict[str, tuple[Path, str | None]]:
    out: dict[str, tuple[Path, str | None]] = {}
    for name in ("manager", "w1", "w2"):
        path = tmp_path / f"{name}.kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig("ctx-" + name)))
        out[name] = (path, "ctx-" + name if name != "manager" else None)
    return out


def kubeconfig(context: str, server: str = "https://127.0.0.1:1") -> dict[str, Any]:
    """A well-formed kubeconfig whose current-context is `context`."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
        "current-context": context,
    }


def provider(args, dyns: dict[str, FakeDyn], dispatcher: str = DISPATCHER) -> ExistingProvider:
    def connect(c: Cluster) -> Any:
        fake = dyns[c.name]
        c.dyn = cast(DynamicClient, fake)
        return fake

    return ExistingProvider(args, dispatcher, connect=connect, purge_timeout=5)


def fakes(**overrides: list[dict[str, Any]]) -> dict[str, FakeDyn]:
    base = {"manager": manager_objects(), "w1": worker_objects(), "w2": worker_objects()}
    return {name: FakeDyn(overrides.get(name, objs)) for name, objs in base.items()}


# ------------------------------------------------------------------ parsing


def test_parse_cluster_args(tmp_path):
    odd = tmp_path / "a:b.kubeconfig"
    odd.write_text("")
    args = parse_cluster_args(
        [
            "manager=/k/m.yaml",
            "w1=/k/w.yaml:kind-w1",
            "w2=/k/w.yaml:arn:aws:eks:eu-west-1:1:cluster/w2",
            f"w3={odd}",
        ]
    )
    assert args == {
        "manager": (Path("/k/m.yaml"), None),
        "w1": (Path("/k/w.yaml"), "kind-w1"),
        "w2": (Path("/k/w.yaml"), "arn:aws:eks:eu-west-1:1:cluster/w2"),
        "w3": (odd, None),
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["manager"], "NAME=KUBECONFIG"),
        (["=x"], "NAME=KUBECONFIG"),
        (["manager=a", "manager=b", "w=c"], "given twice"),
        (["w1=a"], "--cluster manager=KUBECONFIG is required"),
        (["manager=a"], "give a worker too"),
    ],
)
def test_parse_cluster_args_rejects(values, message):
    with pytest.raises(UserError, match=message):
        parse_cluster_args(values)


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("registry.k8s.io/kueue/kueue:v0.19.2", "0.19.2"),
        ("localhost:5000/kueue:v0.17.1@sha256:abc", "0.17.1"),
        ("kueue:0.19.2", "0.19.2"),
        ("localhost:5000/kueue", None),
        ("us-docker.pkg.dev/kueue/kueue:main", None),
        ("registry.k8s.io/kueue/kueue@sha256:abc", None),
    ],
)
def test_image_version(image, version):
    assert image_version(image) == version


# --------------------------------------------------------------------- up()


def test_up_accepts_a_conforming_setup_without_writing(kubeconfigs):
    dyns = fakes()
    p = provider(kubeconfigs, dyns)
    env = p.up()
    try:
        assert env.provider == "existing"
        assert env.manager.name == "manager" and env.manager.context is None
        assert [(w.name, w.context) for w in env.workers] == [("w1", "ctx-w1"), ("w2", "ctx-w2")]
        assert env.kueue_version == "v0.19.2"
        assert env.kubernetes_version == "v1.36.3"
        assert env.dispatcher_name == DISPATCHER
        assert env.info["workerSecrets"] == {"w1": "w1-secret", "w2": "shared"}
        assert env.info["provisioningRequestCRD"] == {"manager": True, "w1": True, "w2": True}
        assert env.info["runId"]
        assert stat.S_IMODE(env.run_dir.stat().st_mode) == 0o700
        assert (env.run_dir / "environment.json").exists()
        assert p.capabilities == frozenset()
        assert all(not d.writes and not d.deleted for d in dyns.values())
    finally:
        p.down()
    assert not env.run_dir.exists()


def test_version_from_config_map_label_when_there_is_no_deployment(kubeconfigs):
    """The local provider's shape: processes, no Deployment, a labelled ConfigMap."""
    manager = [*crds(), config_map(version="v0.17.1"), mk_cluster("w1"), mk_cluster("w2")]
    worker = [*crds(), config_map(dispatcher=None, version="v0.17.1")]
    p = provider(kubeconfigs, fakes(manager=manager, w1=worker, w2=worker))
    env = p.up()
    p.down()
    assert env.kueue_version == "v0.17.1"


def test_default_dispatcher_when_unset(kubeconfigs):
    manager = [
        *crds(),
        deployment(),
        config_map(dispatcher=None),
        mk_cluster("w1"),
        mk_cluster("w2"),
    ]
    """Kueue's config without multiKueue.dispatcherName means its default, AllAtOnce: a
    profile of AllAtOnce is accepted, any other is refused with the fix."""
    p = provider(kubeconfigs, fakes(manager=manager), dispatcher=existing.DEFAULT_DISPATCHER)
    env = p.up()
    p.down()
    assert env.dispatcher_name == existing.DEFAULT_DISPATCHER
    other = provider(kubeconfigs, fakes(manager=manager), dispatcher=DISPATCHER)
    with pytest.raises(UserError, match="set multiKueue.dispatcherName"):
        other.up()


def test_down_deletes_only_this_runs_objects(kubeconfigs):
    dyns = fakes()
    p = provider(kubeconfigs, dyns)
    env = p.up()
    run = env.info["runId"]
    dyns["manager"].objects += [
        obj("v1", "Namespace", "t1", run=run),
        obj(API, "ClusterQueue", "t1", run=run),
        obj(API, "ClusterQueue", "old", run="someone-else"),
    ]
    dyns["w1"].objects.append(obj("v1", "Namespace", "t1", run=run))
    p.down()
    assert dyns["manager"].deleted == [("Namespace", None, "t1"), ("ClusterQueue", None, "t1")]
    assert dyns["w1"].deleted == [("Namespace", None, "t1")]
    assert dyns["w2"].deleted == []
    assert any(o["metadata"]["name"] == "old" for o in dyns["manager"].objects)
    assert RUN_LABEL == "mkdc.x-k8s.io/run"


def _fails(kubeconfigs, dyns: dict[str, FakeDyn], match: str, dispatcher: str = DISPATCHER):
    with pytest.raises(UserError, match=match) as err:
        provider(kubeconfigs, dyns, dispatcher).up()
    assert "\n" not in str(err.value)
    assert all(not d.writes and not d.deleted for d in dyns.values())
    return str(err.value)


def test_missing_kubeconfig(kubeconfigs):
    kubeconfigs["w2"][0].unlink()
    _fails(kubeconfigs, fakes(), r"--cluster w2: kubeconfig .*w2.kubeconfig does not exist")


def test_unreachable_cluster(kubeconfigs):
    def refuse(c: Cluster) -> Any:
        if c.name == "w1":
            pool = HTTPConnectionPool("127.0.0.1")
            raise MaxRetryError(
                pool, "/version", ConnectionRefusedError("Connection refused\nsecond line")
            )
        return fakes()[c.name]

    p = ExistingProvider(kubeconfigs, DISPATCHER, connect=refuse)
    with pytest.raises(UserError, match=r"--cluster w1: cannot connect with .* \(context ctx-w1\)"):
        p.up()


def test_bad_kubeconfig_content_is_a_user_error(kubeconfigs):
    """A kubeconfig without clusters: said before any connection is tried."""
    kubeconfigs["manager"][0].write_text("apiVersion: v1\nkind: Config\n")
    p = ExistingProvider(kubeconfigs, DISPATCHER)
    with pytest.raises(UserError, match="--cluster manager: kubeconfig .* no current-context"):
        p.up()


def test_refused_connection_says_so(kubeconfigs):
    """The real connect path to a closed port: the reason, not urllib3's wrapping."""
    p = ExistingProvider(kubeconfigs, DISPATCHER)
    with pytest.raises(UserError) as err:
        p.up()
    assert str(err.value).endswith(" to https://127.0.0.1:1: Connection refused"), err.value


def test_kueue_not_installed(kubeconfigs):
    worker = [o for o in worker_objects() if "workloads" not in o["metadata"]["name"]]
    _fails(kubeconfigs, fakes(w2=worker), r"--cluster w2: Kueue is not installed \(no CRD work")


def test_unsupported_kueue_version(kubeconfigs):
    worker = [*crds(), deployment("registry.k8s.io/kueue/kueue:v0.16.0")]
    msg = _fails(kubeconfigs, fakes(w1=worker), r"--cluster w1 runs Kueue v0.16.0, which mkdc")
    assert "v0.19.2" in msg


def test_unknown_kueue_version(kubeconfigs):
    worker = [*crds(), deployment("kueue:main")]
    _fails(kubeconfigs, fakes(w1=worker), "cannot tell which Kueue version")


def test_dispatcher_mismatch(kubeconfigs):
    msg = _fails(kubeconfigs, fakes(), "uses dispatcherName mkdc.example/reference", "other/d")
    assert "other/d" in msg


def test_dispatcher_config_missing(kubeconfigs):
    manager = [o for o in manager_objects() if o["kind"] != "ConfigMap"]
    _fails(kubeconfigs, fakes(manager=manager), "no ConfigMap kueue-system/kueue-manager-config")


def test_worker_is_not_a_multikueue_cluster(kubeconfigs):
    manager = [o for o in manager_objects() if o["metadata"]["name"] != "w2"]
    _fails(kubeconfigs, fakes(manager=manager), "the manager has no MultiKueueCluster w2")


def test_worker_is_not_active(kubeconfigs):
    manager = [*manager_objects()[:-1], mk_cluster("w2", active="False")]
    _fails(
        kubeconfigs,
        fakes(manager=manager),
        "MultiKueueCluster w2 on the manager is not Active: boom",
    )


def test_worker_kubeconfig_not_in_a_secret(kubeconfigs):
    path_based = mk_cluster("w2")
    path_based["spec"]["clusterSource"]["kubeConfig"]["locationType"] = "Path"
    manager = [*manager_objects()[:-1], path_based]
    _fails(kubeconfigs, fakes(manager=manager), "does not read its kubeconfig from a Secret")


def test_cannot_take_processes_out(kubeconfigs):
    with pytest.raises(UserError, match="cannot take w1-apiserver out"):
        ExistingProvider(kubeconfigs, DISPATCHER).interrupt("w1-apiserver", "stop")
