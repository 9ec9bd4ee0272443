"""Objects a dispatcher needs before it starts (`spec.run.objects`): a ConfigMap of prices,
a Secret per cluster named by its own rule, a CRD of its own.

Each entry is a file or a folder of YAML (relative to the profile) or a manifest written
inline. String values may hold placeholders (see harness.templates): `{namespace}` (Kueue's
namespace on the manager, where the dispatcher runs), `{dispatcher_name}`, and `{cluster}`:
a worker's name. A manager object that names `{cluster}` is made once per worker; a
`workers` object on every worker, with `{cluster}` its own name. A namespaced object
without a namespace goes to `{namespace}`, as `kubectl apply -n` would put it.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes.client.rest import ApiException

from harness import templates
from harness.cluster import kube
from harness.cluster.environment import Cluster, Environment
from harness.errors import UserError, one_line

PLACES = ("manager", "workers")
PLACEHOLDERS = ("namespace", "dispatcher_name", "cluster")


@dataclass(frozen=True)
class Objects:
    """Manifests (unrendered) for the manager and for every worker."""

    manager: tuple[dict[str, Any], ...] = ()
    workers: tuple[dict[str, Any], ...] = ()
    # False for a vendor's own YAML (a deploy folder): made as written, braces and all
    templated: bool = True

    def __bool__(self) -> bool:
        return bool(self.manager or self.workers)


def documents(entry: Any, base: Path, templated: bool = True) -> list[dict[str, Any]]:
    """The manifests one entry stands for: an inline mapping, or a file or folder of YAML
    (*.yaml, *.yml, in name order). ValueError says what is wrong, for the profile's
    error line."""
    if isinstance(entry, dict):
        docs: list[Any] = [entry]
    elif isinstance(entry, str) and entry:
        path = (base / entry).resolve()
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        elif path.is_file():
            files = [path]
        else:
            raise ValueError(f"{entry}: no such file or folder (relative to the profile)")
        docs = []
        for file in files:
            try:
                docs += [d for d in yaml.safe_load_all(file.read_text()) if d is not None]
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                raise ValueError(f"{file.name}: not YAML ({str(exc).splitlines()[0]})") from None
    else:
        raise ValueError("must be a manifest (a mapping) or a path to YAML")
    for i, doc in enumerate(docs):
        problem = _manifest_problem(doc)
        if problem:
            raise ValueError(f"document {i + 1}: {problem}")
        for text in _strings(doc) if templated else ():
            wrong = templates.problem(text, PLACEHOLDERS)
            if wrong:
                raise ValueError(f"{_name(doc)}: {wrong}")
    return docs


def rendered(
    objects: Objects, env: Environment, namespace: str, dispatcher_name: str
) -> Iterator[tuple[Cluster, dict[str, Any]]]:
    """(cluster, manifest) for every object to make, placeholders filled."""
    return _rendered(objects, env.manager, env.workers, namespace, dispatcher_name)


def planned(
    objects: Objects, workers: Sequence[str], namespace: str, dispatcher_name: str
) -> list[str]:
    """What `rendered` would make on clusters of these names, a line each (no cluster
    needed: `mkdc profile check` says it)."""
    places = _rendered(
        objects, _Named("manager"), [_Named(w) for w in workers], namespace, dispatcher_name
    )
    return [f"{_name(doc)} on {place.name}" for place, doc in places]


@dataclass(frozen=True)
class _Named:
    name: str


_Place = TypeVar("_Place", Cluster, _Named)


def _rendered(
    objects: Objects,
    manager: _Place,
    workers: Sequence[_Place],
    namespace: str,
    dispatcher_name: str,
) -> Iterator[tuple[_Place, dict[str, Any]]]:
    values = {"namespace": namespace, "dispatcher_name": dispatcher_name}
    if not objects.templated:
        for doc in objects.manager:
            yield manager, copy.deepcopy(doc)
        for worker in workers:
            for doc in objects.workers:
                yield worker, copy.deepcopy(doc)
        return
    for doc in objects.manager:
        if any("cluster" in templates.names(t) for t in _strings(doc)):
            for worker in workers:
                yield manager, _render(doc, {**values, "cluster": worker.name}, namespace)
        else:
            yield manager, _render(doc, {**values, "cluster": ""}, namespace)
    for worker in workers:
        for doc in objects.workers:
            yield worker, _render(doc, {**values, "cluster": worker.name}, namespace)


@contextlib.contextmanager
def made(
    objects: Objects,
    env: Environment,
    namespace: str,
    dispatcher_name: str,
    labels: Mapping[str, str],
) -> Iterator[list[str]]:
    """Make the objects (server-side apply, with `labels`); delete them on leaving.
    Yields a line per object, for the console."""
    done: list[tuple[Cluster, dict[str, Any]]] = []
    try:
        for cluster, doc in rendered(objects, env, namespace, dispatcher_name):
            doc.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
            if kube.resource(cluster.dyn, doc["apiVersion"], doc["kind"]).namespaced:
                doc["metadata"].setdefault("namespace", namespace)
            else:
                doc["metadata"].pop("namespace", None)
            try:
                kube.apply(cluster.dyn, doc)
            except ApiException as exc:  # the API's refusal, said as the profile's problem
                raise UserError(
                    f"spec.run.objects: {_name(doc)} on {cluster.name} was refused:"
                    f" {exc.status} {one_line(_message(exc))}"
                ) from None
            done.append((cluster, doc))
        yield [f"{_name(doc)} on {cluster.name}" for cluster, doc in done]
    finally:
        for cluster, doc in reversed(done):
            meta = doc["metadata"]
            with contextlib.suppress(Exception):  # cleanup is best effort
                kube.delete(
                    cluster.dyn, doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace")
                )


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "").get("message") or exc.reason)
    except (TypeError, ValueError):
        return str(exc.reason)


def _render(doc: Any, values: dict[str, str], namespace: str) -> Any:
    if isinstance(doc, dict):
        return {k: _render(v, values, namespace) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_render(v, values, namespace) for v in doc]
    if isinstance(doc, str):
        return templates.render(doc, values)
    return doc


def _strings(doc: Any) -> Iterable[str]:
    if isinstance(doc, dict):
        for value in doc.values():
            yield from _strings(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _strings(value)
    elif isinstance(doc, str):
        yield doc


def _manifest_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return "not a manifest (a mapping)"
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            return f"has no {key}"
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return f"{doc['kind']} has no metadata.name"
    return None


def _name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('kind', '?')} {where}{meta.get('name', '?')}"
