"""The evidence of a broken scenario, gathered before its cleanup for the report's
artifacts: its timeline, the Workloads and Events of every cluster, and its MultiKueue
objects on the manager."""

from __future__ import annotations

import json
import time

from harness import userfiles
from harness.cluster.multikueue import API
from harness.scenarios.scenario import Scenario
from harness.scenarios.session import current


def collect_artifacts(sc: Scenario) -> None:
    """What a reader needs to see why a check failed, gathered before cleanup."""
    out = current().report_dir / "artifacts" / sc.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "timeline.json").write_text(json.dumps(sc.timeline().to_list(), indent=1))
    for cluster in sc.ctx.env.clusters:
        docs = {}
        for kind, ns in (("Workload", sc.ns), ("Event", sc.ns)):
            api = API if kind == "Workload" else "v1"
            try:
                docs[kind] = cluster.resource(api, kind).get(namespace=ns).to_dict()["items"]
            except Exception as exc:  # a cluster may be unreachable: say so in the artifact
                docs[kind] = f"unavailable: {exc}"
        (out / f"{cluster.name}.yaml").write_text(userfiles.dump_yaml(docs, sort_keys=False))
    mk = {}
    for kind in ("MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"):
        items = sc.ctx.env.manager.resource(API, kind).get().to_dict()["items"]
        mk[kind] = [i for i in items if i["metadata"]["name"].startswith(sc.name)]
    (out / "multikueue.yaml").write_text(userfiles.dump_yaml(mk, sort_keys=False))
    (out / "collected-at.txt").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
