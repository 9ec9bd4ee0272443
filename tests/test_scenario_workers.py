"""Scenarios take workers by position, never by name; CORE-01's decoys sort first, sit in
the best tier, have capacity and stay outside the config; core scenarios time themselves
from the claims and are never skipped for time."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes.dynamic import DynamicClient

from harness.cluster.environment import Cluster, Environment
from harness.errors import EnvironmentLimit
from harness.profile import load_profile
from harness.recording.recorder import Recorder as HarnessRecorder
from harness.scenarios import scenario as scenario_module
from harness.scenarios.context import Context
from harness.scenarios.documents import name_before
from harness.scenarios.scenario import Scenario
from suites import judge, judgement
from tests.sessions import use_session

NAMES = ["east-cluster", "west-cluster", "gpu-reserved-cluster"]
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class Recorder:
    def __init__(self) -> None:
        self.marks: list[tuple[str, dict[str, Any]]] = []

    def now(self) -> float:
        return 0.0

    def mark(self, what: str, **data: Any) -> None:
        self.marks.append((what, data))

    def users(self) -> frozenset[str]:
        return frozenset()


class Items:
    """What a dynamic resource's get() returns."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def to_dict(self) -> dict[str, Any]:
        return self.doc


class FakeCluster(Cluster):
    """A cluster whose reads come from `objects` (kind -> list of objects)."""

    def __init__(self, name: str, objects: dict[str, list[dict[str, Any]]]) -> None:
        super().__init__(name, Path("/nonexistent"), "manager")
        self.objects = objects
        self.dyn = cast(DynamicClient, SimpleNamespace(cluster=name))

    def resource(self, api_version: str, kind: str) -> Any:
        items = self.objects.get(kind, [])

        def get(name: str | None = None, **_: Any) -> Items:
            if name is None:
                return Items({"items": items})
            return Items(next(i for i in items if i["metadata"]["name"] == name))

        return SimpleNamespace(get=get)


def environment(names: Sequence[str], mkcs: Sequence[str] = ()) -> Environment:
    secrets = [
        {"metadata": {"name": f"multikueue-{n}"}, "data": {"kubeconfig": f"of-{n}"}} for n in names
    ]
    manager = FakeCluster(
        "manager",
        {"Secret": secrets, "MultiKueueCluster": [{"metadata": {"name": m}} for m in mkcs]},
    )
    workers: list[Cluster] = [FakeCluster(n, {}) for n in names]
    return Environment("local", Path("/tmp"), manager, workers, "v1.36.3", "v0.19.2", "x")


def make(
    profile: str = "reference", names: Sequence[str] = NAMES, mkcs: Sequence[str] = ()
) -> Scenario:
    ctx = Context(
        env=environment(names, mkcs),
        profile=load_profile(profile),
        recorder=cast(HarnessRecorder, Recorder()),
        run_id="r",
    )
    return Scenario(ctx, "nominates-configured-only-ab12")


# ------------------------------------------------------------------ picking


def test_workers_are_picked_by_position_whatever_their_names() -> None:
    sc = make()
    assert sc.workers(2) == ["east-cluster", "west-cluster"]
    assert sc.workers() == NAMES
    assert sc.workers(at_least=3) == NAMES


def test_too_few_workers_is_an_environment_limit_with_the_reason() -> None:
    sc = make(names=NAMES[:2])
    with pytest.raises(EnvironmentLimit, match=r"needs 3 worker clusters \(two in the config\)"):
        sc.workers(3, why="two in the config")
    with pytest.raises(EnvironmentLimit, match="the environment has 2"):
        sc.workers(at_least=3)
    assert sc.workers(2) == NAMES[:2]


def test_no_scenario_names_a_worker() -> None:
    root = Path(__file__).resolve().parent.parent
    sources = [*(root / "suites").rglob("*.py"), root / "harness" / "scenarios" / "scenario.py"]
    named = [
        f"{p.name}: {m.group()}" for p in sources for m in re.finditer(r"worker\d", p.read_text())
    ]
    assert named == []


# ------------------------------------------------------------------ decoys


def test_a_name_before_sorts_before_every_taken_name_and_is_valid() -> None:
    taken = ["worker1", "nominates-configured-only-ab12-west-cluster", "0-a", "0--b"]
    name = name_before(taken, "nominates-configured-only-ab12-east-cluster")
    assert name < min(taken) and DNS_SUBDOMAIN.fullmatch(name), name
    assert name_before([], "x") == "0-x"
    assert name_before(["a"], "x") == "0-x"


def record_applies(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """What a scenario applies, as (cluster, document), instead of applying it."""
    created: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        scenario_module.kube, "apply", lambda dyn, doc: created.append((dyn.cluster, doc))
    )
    return created


def test_decoys_sort_first_sit_in_the_best_tier_and_stay_outside_the_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    created = record_applies(monkeypatch)
    waited: list[list[str]] = []
    monkeypatch.setattr(
        scenario_module.multikueue, "wait_active", lambda m, c, a, timeout: waited.append(c)
    )
    sc = make(mkcs=["east-cluster", "west-cluster", "abc-west-cluster"])
    sc.order = [sc.cluster("west-cluster")]
    sc.members = {sc.cluster("west-cluster"): "west-cluster"}
    [decoy] = sc.with_decoys(["east-cluster"])

    assert decoy < "abc-west-cluster" and decoy not in sc.order and decoy not in sc.members
    assert sc.decoys == {decoy: "east-cluster"} and waited == [[decoy]]
    by_kind = {(where, d["kind"]): d for where, d in created}
    mkc = by_kind[("manager", "MultiKueueCluster")]
    assert mkc["metadata"]["name"] == decoy
    assert mkc["metadata"]["labels"]["mkdc.example/tier"] == "0"
    secret = by_kind[("manager", "Secret")]
    assert secret["data"] == {"kubeconfig": "of-east-cluster"}  # reaches the real worker
    assert mkc["spec"]["clusterSource"]["kubeConfig"]["location"] == secret["metadata"]["name"]
    quota = by_kind[("east-cluster", "ClusterQueue")]["spec"]["resourceGroups"][0]["flavors"][0]
    assert {r["name"]: r["nominalQuota"] for r in quota["resources"]}["cpu"] == "1"
    recorder = cast(Recorder, sc.ctx.recorder)  # the fake that make() gave the context
    assert recorder.marks == [("decoys", {"scenario": sc.name, "clusters": [decoy]})]


# ------------------------------------------------------------------ timing


def test_core_scenarios_need_one_escalation_whatever_the_round() -> None:
    assert judge.one_escalation(make("reference")) == 2  # stepSize 1
    assert judge.one_escalation(make("incremental")) == 4  # stepSize 3
    assert judge.one_escalation(make("all-at-once")) == 2  # "all": no escalation


def test_capacity_goes_where_the_claims_have_nominated_by_then() -> None:
    sc = make("reference")
    sc.order = [sc.cluster("west-cluster"), sc.cluster("gpu-reserved-cluster")]
    # 10 s rounds: the second is nominated at 10 s, within 15 s of pending
    assert judge.nominated_within(sc, 15) == sc.order[1]
    # a 30 s or 5 min round: only the first is, so no round is waited for
    assert judge.nominated_within(sc, 5) == sc.order[0]
    inc = make("incremental")  # stepSize 3: both at once
    inc.order = list(sc.order)
    assert judge.nominated_within(inc, 20) == sc.order[1]


def test_claimed_order_sorts_alphabetically_when_that_is_claimed() -> None:
    sc = make("reference")
    assert judge.claimed_order(sc, ["west-cluster", "east-cluster"]) == [
        "west-cluster",
        "east-cluster",
    ]
    claims = dataclasses.replace(sc.ctx.profile.claims, ordering="alphabetical")
    sc.ctx.profile = dataclasses.replace(sc.ctx.profile, claims=claims)
    assert judge.claimed_order(sc, ["west-cluster", "east-cluster"]) == [
        "east-cluster",
        "west-cluster",
    ]


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_session(tmp_path, monkeypatch) / "results"


def test_a_core_check_is_never_skipped_for_time(session: Path) -> None:
    sc = make("incremental")
    judgement.judging(sc, ["CORE-04"])
    judge.skip_if_slow(sc, 900)  # runs: a 5-minute round is judged by default
    assert list(session.iterdir()) == []


def test_an_extended_check_waits_for_the_full_run(session: Path) -> None:
    sc = make("incremental")
    judgement.judging(sc, ["EXT-05", "EXT-06"])
    with pytest.raises(pytest.skip.Exception, match="full run only"):
        judge.skip_if_slow(sc, 375)
    records = [json.loads(p.read_text()) for p in session.iterdir()]
    assert {r["check"] for r in records} == {"EXT-05", "EXT-06"}
    assert all(r["result"] == "skipped" and "--full" in r["message"] for r in records)


def worker_needs(source: str) -> list[str]:
    """What each `<scenario>.workers(...)` call in a suite module asks for: a whole number,
    `one_escalation`, `all`, or what the call's arguments are when none of those."""
    needs = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "workers":
            continue
        args = [*node.args, *(k.value for k in node.keywords if k.arg == "at_least")]
        if not args:
            needs.append("all")
        for arg in args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                needs.append(str(arg.value))
            elif isinstance(arg, ast.Call) and getattr(arg.func, "id", "") == "one_escalation":
                needs.append("one_escalation")
            else:
                needs.append(ast.unparse(arg))
    return needs


def test_fewest_workers_covers_what_every_scenario_asks_for() -> None:
    """`fewest_workers` is stated, not computed (a scenario's need is known only as it
    runs): each scenario's ask must be one it covers."""
    asks = [
        need
        for module in sorted((Path(judge.__file__).parent / "conformance").glob("*.py"))
        for need in worker_needs(module.read_text())
    ]
    assert "one_escalation" in asks and str(judge.MOST_WORKERS_BY_NUMBER) in asks
    # what it must catch: a number above the figure, or an ask it cannot read
    assert worker_needs("sc.workers(4)\nsc.workers(at_least=n + 1)\nsc.workers()") == [
        "4",
        "n + 1",
        "all",
    ]
    for need in asks:
        assert need in {"all", "one_escalation"} or (
            need.isdigit() and int(need) <= judge.MOST_WORKERS_BY_NUMBER
        ), f"a scenario asks for {need} workers: make fewest_workers cover it"


@pytest.mark.parametrize(("step", "fewest"), [("all", 3), (1, 3), (2, 3), (3, 4), (5, 6)])
def test_fewest_workers_is_stepsize_plus_one_and_at_least_three(step: object, fewest: int) -> None:
    claims = SimpleNamespace(step_size=step)
    assert judge.fewest_workers(claims) == fewest  # type: ignore[arg-type]
