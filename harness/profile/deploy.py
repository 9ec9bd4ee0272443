"""A vendor's deploy folder (`spec.run.manifests`), read as the local provider runs it.

Vendors ship YAML, not profiles: a ServiceAccount, Roles and ClusterRoles with their
bindings, ConfigMaps and Secrets with settings, and one Deployment. On the local provider
each replica is a process that gets what its Pod would:
- the rules bound to the Deployment's ServiceAccount, granted as written (reported as
  `privileges`);
- its ConfigMaps and Secrets made on the manager, and mounted as files where the pod's
  volumes say;
- its container's command, args and env, with `valueFrom` (ConfigMaps, Secrets, the
  downward API), `envFrom` and `$(VAR)` references resolved as the kubelet does;
- the Deployment's replicas.
Any other object (a CRD, a Service) is made on the manager as written. What the local
provider cannot honour is named in `notes`, one line each, never dropped silently.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster.probes import Probe
from harness.profile import objects

RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
# pod fields the downward API gives a replica: the runner fills them per replica
POD_FIELDS = (
    "metadata.name",
    "metadata.namespace",
    "spec.serviceAccountName",
    "spec.nodeName",
    "status.podIP",
    "status.hostIP",
)
CONTAINER_FIELDS = {"name", "image", "command", "args", "env", "envFrom", "volumeMounts"}
CONTAINER_FIELDS |= {"workingDir", "ports", "imagePullPolicy", "readinessProbe", "livenessProbe"}
CONTAINER_FIELDS |= {"resources", "securityContext"}
POD_SPEC_FIELDS = {"containers", "volumes", "serviceAccountName", "serviceAccount"}
POD_SPEC_FIELDS |= {"hostNetwork", "automountServiceAccountToken", "restartPolicy"}
POD_SPEC_FIELDS |= {"securityContext", "terminationGracePeriodSeconds"}
# the securityContext fields a replica's user comes from; the others are named as not applied
USER_FIELDS = {"runAsUser", "runAsGroup", "runAsNonRoot"}
PROBE_HANDLERS = ("httpGet", "tcpSocket", "exec")
PROBE_TIMINGS = {
    "initialDelaySeconds": 0,
    "periodSeconds": 10,
    "timeoutSeconds": 1,
    "successThreshold": 1,
    "failureThreshold": 3,
}
KEY_REFS = (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef"))
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")


@dataclass(frozen=True)
class Mount:
    """Files a container sees at `path`: a volume's, or one of them (`sub_path`)."""

    path: str
    volume: str
    files: dict[str, bytes]  # relative path -> content (an emptyDir has none)
    sub_path: str | None = None
    empty_dir: bool = False  # each replica's own, empty at its start


@dataclass(frozen=True)
class Resources:
    """The container's requests and limits, in bytes (memory) and cores (cpu)."""

    requests: dict[str, float]
    limits: dict[str, float]


@dataclass(frozen=True)
class Pod:
    """What the Deployment's container needs to run as a replica."""

    deployment: str
    container: str
    replicas: int
    command: tuple[str, ...] | None  # None: the image's entrypoint
    args: tuple[str, ...]
    env: dict[str, str]  # literal values, references resolved
    pod_fields: dict[str, str]  # variable -> downward-API field path, filled per replica
    mounts: tuple[Mount, ...]
    working_dir: str | None
    image: str | None
    host_network: bool
    service_account: str = "default"
    run_as_user: int | None = None  # securityContext, the container's over the pod's
    run_as_group: int | None = None
    run_as_non_root: bool = False
    readiness: Probe | None = None
    liveness: Probe | None = None
    restart_policy: str = "Always"
    resources: Resources = Resources({}, {})
    grace_seconds: float = 30.0  # terminationGracePeriodSeconds


@dataclass(frozen=True)
class DeployFolder:
    pod: Pod
    cluster_rules: tuple[dict[str, Any], ...]
    namespace_rules: tuple[dict[str, Any], ...]
    objects: objects.Objects  # made on the manager before the dispatcher starts
    notes: tuple[str, ...]  # what the local provider does not honour, one line each
    # every document as written: kind and existing clusters get them applied as they are
    documents: tuple[dict[str, Any], ...] = ()

    @property
    def deployment(self) -> dict[str, Any]:
        return next(d for d in self.documents if d["kind"] == "Deployment")


def side_containers(deployment: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(what, name, image) of every container but the dispatcher's (the first): init
    containers, then sidecars, as a vendor's one line names them."""
    spec = _pod_spec(deployment)
    found = [("init container", c) for c in spec.get("initContainers") or []]
    found += [("container", c) for c in spec["containers"][1:]]
    return [(what, str(c.get("name")), str(c.get("image") or "")) for what, c in found]


def read(entries: list[str], base: Path, namespace: str) -> DeployFolder:
    """The folder(s) or file(s) `entries` (relative to `base`), for a dispatcher that runs
    in `namespace`. ValueError says what is wrong in words for the vendor."""
    docs: list[dict[str, Any]] = []
    for entry in entries:
        docs += objects.documents(entry, base)
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    if len(deployments) != 1:
        found = ", ".join(d["metadata"]["name"] for d in deployments) or "none"
        raise ValueError(f"needs exactly one Deployment (the dispatcher), found {found}")
    [deployment] = deployments
    notes: list[str] = []
    own = deployment["metadata"].get("namespace")
    if own and own != namespace:
        notes.append(
            f"namespace {own}: the dispatcher runs in {namespace} (Kueue's namespace, where the"
            f" worker Secrets are); its objects in {own} are made there"
        )
    config = _Objects(docs, own or namespace)
    pod = _pod(deployment, config, notes)
    account = _service_account(deployment)
    cluster_rules, namespace_rules = _rules(docs, account, own or namespace, notes)
    made: list[dict[str, Any]] = []
    for doc in docs:
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind in ("Deployment", *RBAC_KINDS):
            continue
        if kind == "Namespace":
            notes.append(f"Namespace {name}: not made (the dispatcher runs in {namespace})")
        elif kind == "ServiceAccount":
            if name != account:
                notes.append(f"ServiceAccount {name}: no Deployment runs as it; not made")
        else:
            made.append(_in_namespace(doc, namespace))
    return DeployFolder(
        pod=pod,
        cluster_rules=tuple(cluster_rules),
        namespace_rules=tuple(namespace_rules),
        objects=objects.Objects(manager=tuple(made)),
        notes=tuple(notes),
        documents=tuple(docs),
    )


class _Objects:
    """The folder's ConfigMaps and Secrets, by name, as text."""

    def __init__(self, docs: list[dict[str, Any]], namespace: str) -> None:
        self.namespace = namespace
        self.config_maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
        self.secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}

    def data(self, kind: str, name: str) -> dict[str, bytes] | None:
        """Every key of the ConfigMap or Secret `name` as bytes; None when not in the folder."""
        doc = (self.config_maps if kind == "ConfigMap" else self.secrets).get(name)
        if doc is None:
            return None
        found: dict[str, bytes] = {}
        for key, value in (doc.get("data") or {}).items():
            found[key] = base64.b64decode(value) if kind == "Secret" else str(value).encode()
        for key, value in (doc.get("binaryData") or {}).items():
            found[key] = base64.b64decode(value)
        for key, value in (doc.get("stringData") or {}).items():
            found[key] = str(value).encode()
        return found


def _service_account(deployment: dict[str, Any]) -> str:
    spec = _pod_spec(deployment)
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def _pod_spec(deployment: dict[str, Any]) -> dict[str, Any]:
    spec = (((deployment.get("spec") or {}).get("template") or {}).get("spec")) or {}
    if not isinstance(spec, dict) or not spec.get("containers"):
        raise ValueError(f"Deployment {deployment['metadata']['name']}: has no containers")
    return spec


def _pod(deployment: dict[str, Any], config: _Objects, notes: list[str]) -> Pod:
    name = deployment["metadata"]["name"]
    spec = _pod_spec(deployment)
    containers = spec["containers"]
    container = containers[0]
    for other in containers[1:]:
        notes.append(f"container {other.get('name')}: not run (only the first, the dispatcher)")
    for init in spec.get("initContainers") or []:
        notes.append(f"init container {init.get('name')}: not run")
    for key in sorted(set(spec) - POD_SPEC_FIELDS - {"initContainers"}):
        notes.append(f"Deployment {name}: spec.template.spec.{key} is not applied here")
    cname = str(container.get("name") or "dispatcher")
    for key in sorted(set(container) - CONTAINER_FIELDS):
        notes.append(f"container {cname}: {key} is not applied here")
    env, pod_fields = _env(container, cname, config, notes)
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    mounts = tuple(
        _mount(m, volumes, cname, config, notes) for m in container.get("volumeMounts") or []
    )
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 1:
        raise ValueError(f"Deployment {name}: spec.replicas must be 1 or more, got {replicas!r}")
    command = container.get("command")
    ports = {str(p.get("name")): p.get("containerPort") for p in container.get("ports") or []}
    security = {**(spec.get("securityContext") or {}), **(container.get("securityContext") or {})}
    for key in sorted(set(security) - USER_FIELDS):
        notes.append(f"container {cname}: securityContext.{key} is not applied here")
    grace = spec.get("terminationGracePeriodSeconds", 30)
    return Pod(
        deployment=name,
        container=cname,
        replicas=replicas,
        command=None if command is None else tuple(_expand(str(a), env) for a in command),
        args=tuple(_expand(str(a), env) for a in container.get("args") or []),
        env=env,
        pod_fields=pod_fields,
        mounts=tuple(m for m in mounts if m is not None),
        working_dir=container.get("workingDir"),
        image=container.get("image"),
        host_network=bool(spec.get("hostNetwork", False)),
        service_account=_service_account(deployment),
        run_as_user=_integer(security, "runAsUser", cname),
        run_as_group=_integer(security, "runAsGroup", cname),
        run_as_non_root=bool(security.get("runAsNonRoot", False)),
        readiness=_probe(container.get("readinessProbe"), "readinessProbe", cname, ports),
        liveness=_probe(container.get("livenessProbe"), "livenessProbe", cname, ports),
        restart_policy=str(spec.get("restartPolicy") or "Always"),
        resources=_resources(container.get("resources") or {}, cname),
        grace_seconds=float(grace) if isinstance(grace, (int, float)) else 30.0,
    )


def _integer(fields: dict[str, Any], key: str, cname: str) -> int | None:
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        at = f"container {cname}: securityContext.{key}"
        raise ValueError(f"{at} must be a user id, got {value!r}")
    return value


def _probe(spec: Any, field: str, cname: str, ports: dict[str, Any]) -> Probe | None:
    """The probe as the kubelet reads it; a named port is looked up in the container's."""
    if spec is None:
        return None
    at = f"container {cname}: {field}"
    handlers = [h for h in PROBE_HANDLERS if h in (spec or {})]
    if not isinstance(spec, dict) or len(handlers) != 1:
        raise ValueError(f"{at}: needs exactly one of {', '.join(PROBE_HANDLERS)}")
    [kind] = handlers
    handler = spec[kind] or {}
    timings: dict[str, float] = {}
    for key, default in PROBE_TIMINGS.items():
        value = spec.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{at}: {key} must be a number of seconds, got {value!r}")
        timings[key] = value
    port: int | None = None
    if kind != "exec":
        named = handler.get("port")
        port = ports.get(str(named)) if isinstance(named, str) and not named.isdigit() else named
        if isinstance(port, str) and port.isdigit():
            port = int(port)
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"{at}: port {named!r} is not a port of the container")
    command = tuple(str(a) for a in handler.get("command") or ())
    if kind == "exec" and not command:
        raise ValueError(f"{at}: exec needs a command")
    return Probe(
        kind=kind,
        port=port,
        path=str(handler.get("path") or "/"),
        scheme=str(handler.get("scheme") or "HTTP").upper(),
        host=handler.get("host"),
        command=command,
        initial_delay=timings["initialDelaySeconds"],
        period=max(timings["periodSeconds"], 1),
        timeout=max(timings["timeoutSeconds"], 1),
        success_threshold=max(int(timings["successThreshold"]), 1),
        failure_threshold=max(int(timings["failureThreshold"]), 1),
    )


_MEMORY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9}
_QUANTITY = re.compile(r"^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G)?$")


def quantity(text: Any, resource: str) -> float:
    """A Kubernetes quantity: cores for cpu (100m = 0.1), bytes for memory."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise ValueError(f"{resource}: {text!r} is not a quantity (100m, 64Mi, 1Gi)")
    number, unit = float(match.group(1)), match.group(2)
    if unit == "m":
        return number / 1000
    return number * _MEMORY.get(unit or "", 1)


def _resources(spec: dict[str, Any], cname: str) -> Resources:
    found: dict[str, dict[str, float]] = {"requests": {}, "limits": {}}
    for part in found:
        for resource, value in (spec.get(part) or {}).items():
            if resource in ("cpu", "memory"):
                where = f"container {cname}: resources.{part}.{resource}"
                found[part][resource] = quantity(value, where)
    return Resources(requests=found["requests"], limits=found["limits"])


def _env(
    container: dict[str, Any], cname: str, config: _Objects, notes: list[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The container's environment as the kubelet builds it: envFrom first, then env in
    order, each value's $(VAR) references expanded from what came before."""
    env: dict[str, str] = {}
    pod_fields: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, ref in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if ref in source:
                data = _referenced(config, kind, source[ref], f"container {cname}: envFrom")
                env.update({prefix + k: v.decode() for k, v in (data or {}).items()})
    for item in container.get("env") or []:
        var = str(item.get("name"))
        if "valueFrom" not in item:
            env[var] = _expand(str(item.get("value", "")), env)
            continue
        source = item["valueFrom"]
        at = f"container {cname}: env {var}"
        if "fieldRef" in source:
            path = str(source["fieldRef"].get("fieldPath"))
            if path in POD_FIELDS:
                pod_fields[var] = path
            else:
                notes.append(f"{at}: fieldRef {path} is not given here (variable left unset)")
            continue
        refs = [(k, r) for k, r in KEY_REFS if r in source]
        if not refs:
            notes.append(f"{at}: {', '.join(source)} is not given here (variable left unset)")
            continue
        [(kind, ref)] = refs[:1]
        selector = source[ref]
        data = _referenced(config, kind, selector, at)
        key = str(selector.get("key"))
        if data is not None and key in data:
            env[var] = data[key].decode()
        elif not selector.get("optional"):
            raise ValueError(f"{at}: {kind} {selector.get('name')} has no key {key}")
    return env, pod_fields


def _referenced(
    config: _Objects, kind: str, selector: dict[str, Any], at: str
) -> dict[str, bytes] | None:
    name = str(selector.get("name"))
    data = config.data(kind, name)
    if data is None and not selector.get("optional"):
        raise ValueError(f"{at}: {kind} {name} is not in the manifests")
    return data


def _mount(
    mount: dict[str, Any],
    volumes: dict[Any, dict[str, Any]],
    cname: str,
    config: _Objects,
    notes: list[str],
) -> Mount | None:
    name, path = mount.get("name"), str(mount.get("mountPath"))
    volume = volumes.get(name)
    at = f"container {cname}: volumeMount {name} at {path}"
    if volume is None:
        raise ValueError(f"{at}: no volume of that name")
    if not path.startswith("/"):
        raise ValueError(f"{at}: mountPath must be absolute")
    files: dict[str, bytes] = {}
    for kind, key, ref in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
        if key in volume:
            source = volume[key]
            data = _referenced(config, kind, {"name": source.get(ref), **source}, at) or {}
            items = source.get("items")
            files = (
                {str(i["path"]): data[str(i["key"])] for i in items if str(i["key"]) in data}
                if items
                else data
            )
            break
    else:
        if "emptyDir" not in volume:
            kinds = ", ".join(k for k in volume if k != "name")
            notes.append(f"{at}: a {kinds} volume is not mounted here")
            return None
    return Mount(
        path=path,
        volume=str(name),
        files=files,
        sub_path=mount.get("subPath"),
        empty_dir="emptyDir" in volume,
    )


def _rules(
    docs: list[dict[str, Any]], account: str, namespace: str, notes: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rules bound to `account`: ClusterRoleBindings give cluster-wide rules,
    RoleBindings in the dispatcher's namespace rules there."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in docs}
    cluster_rules: list[dict[str, Any]] = []
    namespace_rules: list[dict[str, Any]] = []
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = binding.get("subjects") or []
        if not any(
            s.get("kind") == "ServiceAccount"
            and s.get("name") == account
            and s.get("namespace", namespace) in (namespace, None)
            for s in subjects
        ):
            continue
        ref = binding.get("roleRef") or {}
        bound_in = binding["metadata"].get("namespace") or namespace
        role_ns = None if ref.get("kind") == "ClusterRole" else bound_in
        role = roles.get((ref.get("kind"), role_ns, ref.get("name"))) or roles.get(
            (ref.get("kind"), None, ref.get("name"))
        )
        said = f"{binding['kind']} {binding['metadata']['name']}"
        if role is None:
            notes.append(
                f"{said}: {ref.get('kind')} {ref.get('name')} is not in the manifests; not granted"
            )
            continue
        if role.get("aggregationRule"):
            notes.append(f"{said}: aggregated {ref.get('kind')} {ref.get('name')}: not granted")
        rules = [r for r in role.get("rules") or [] if isinstance(r, dict)]
        if binding["kind"] == "ClusterRoleBinding":
            cluster_rules += rules
        elif bound_in == namespace:
            namespace_rules += rules
        else:
            notes.append(f"{said}: rules in namespace {bound_in} are not granted here")
    return cluster_rules, namespace_rules


def _in_namespace(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    """`doc` with a namespace it had set to the dispatcher's (cluster-scoped kinds lose it
    when made: harness.profile.objects knows which are)."""
    meta = dict(doc["metadata"])
    if meta.get("namespace"):
        meta["namespace"] = namespace
    return {**doc, "metadata": meta}


def _expand(text: str, env: dict[str, str]) -> str:
    """$(VAR) from `env` as the kubelet expands it: unknown references stay, $$ is $."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REFERENCE.sub(one, text)
