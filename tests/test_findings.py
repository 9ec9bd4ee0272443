"""Findings on hand-made timelines: each fires on the story it explains and stays quiet on
a conforming dispatcher's."""

from __future__ import annotations

from harness.recording.timeline import Kind
from harness.report import Report, verify_report_data
from harness.results import Result, ScenarioResult
from harness.suite import catalogue
from suites.findings import detect
from tests.timelines import Story

ME = "system:serviceaccount:kueue-system:mkdc-dispatcher-0"
CLAIMS = {"stepSize": 1, "roundTimeout": 10.0}
CONFIG = ["sc-w1", "sc-w2"]


def record(
    story: Story,
    scenario: str = "sc",
    *,
    check: str = "CORE-04",
    result: str = "passed",
    origin: float = 1000.0,
    until: float = 60.0,
    config: list[str] | None = None,
    shared: bool = False,
) -> ScenarioResult:
    """A result record as suites.judge writes it."""
    return ScenarioResult(
        check=check,
        scenario=scenario,
        result=Result(result),
        timeline=story.timeline().to_list(),
        origin=origin,
        observed_until=until,
        config=tuple(CONFIG if config is None else config),
        shared_clusters=shared,
        dispatcher_users=(ME,),
    )


def conforming(workload: str = "sc/wl") -> Story:
    """Nominated in rounds, placed on the second cluster: what a good dispatcher does."""
    return (
        Story(workload)
        .created(0)
        .write(0.4, ME, names=["sc-w1"])
        .nominate(0.5, "sc-w1")
        .write(10.4, ME, names=["sc-w1", "sc-w2"])
        .write(10.5, ME, code=409)
        .nominate(10.6, "sc-w1", "sc-w2")
        .place(15, "sc-w2")
        .read(30, ME, "watch")
    )


def ids(records: list[ScenarioResult]) -> list[str]:
    return [f.id for f in detect(records, CLAIMS)]


def test_a_conforming_run_has_no_findings() -> None:
    assert detect([record(conforming()), record(conforming(), check="CORE-01")], CLAIMS) == []


def test_nominated_outside_config_names_the_config_and_the_outside_names() -> None:
    def blind(scenario: str) -> Story:
        return Story(f"{scenario}/wl").created(0).nominate(1, "worker1", "worker2")

    records = [
        record(blind("a"), "a", check="CORE-01", result="failed"),
        record(blind("a"), "a", check="CORE-03", result="undecided"),
        record(blind("b"), "b", check="CORE-06", result="undecided", config=["b-w1"]),
    ]
    (finding,) = detect(records, CLAIMS)
    assert finding.id == "nominated-outside-config"
    assert "worker1, worker2" in finding.detail and "had sc-w1, sc-w2" in finding.detail
    assert "fixed list" in finding.detail  # the same names in every scenario
    assert finding.scenarios == ("a", "b")
    assert finding.checks == ("CORE-01", "CORE-03", "CORE-06")
    # a cluster added to the config later is in it from then on
    added = Story("a/wl").created(0).env(1, Kind.CONFIG_CHANGED, config="a", clusters=["w9"])
    assert ids([record(added.nominate(2, "w9"), "a")]) == []


def test_never_nominated_when_nothing_was_ever_nominated() -> None:
    pending = Story("sc/wl").created(0).read(1, ME)
    (finding,) = detect([record(pending, result="failed")], CLAIMS)
    assert finding.id == "never-nominated" and "up to 60s" in finding.detail
    assert finding.checks == ("CORE-04",)
    assert ids([record(pending, until=20)]) == []  # not long enough to tell
    # nominated elsewhere: not "never", but ignored there (ignored-new-clusters)
    assert "never-nominated" not in ids([record(pending), record(conforming("b/wl"), "b")])


def test_clusters_made_after_start_never_nominated_by_a_dispatcher_that_reads_them_once() -> None:
    pending = Story("late/wl").created(0).read(1, ME)
    records = [
        record(conforming("a/wl"), "a", shared=True),
        record(conforming("b/wl"), "b", check="EXT-05", shared=True),
        record(pending, "late", check="CORE-07", result="failed"),
    ]
    (finding,) = detect(records, CLAIMS)
    assert finding.id == "ignored-new-clusters"
    assert finding.scenarios == ("late",) and finding.checks == ("CORE-07",)
    assert "discovers clusters and configs only at start" in finding.detail
    # a controller with open watches makes no request while idle: the pattern still holds,
    # and its silence is not taken for a dispatcher that stopped
    idle = Story("late/wl").created(0)
    records[-1] = record(idle, "late", check="CORE-07", result="failed", origin=1100.0, until=99)
    assert ids(records) == ["ignored-new-clusters"]
    # every scenario has its own clusters: the same silence, without the diagnosis
    own = [record(conforming("a/wl"), "a"), record(pending, "late", result="failed")]
    (finding,) = detect(own, CLAIMS)
    assert "only at start" not in finding.detail and "while it ran" in finding.detail
    assert ids([record(conforming("a/wl"), "a"), record(pending, "late", until=20)]) == []
    # a dispatcher that went quiet before the workloads came did not ignore them
    quiet = Story("late/wl").created(0)
    assert "ignored-new-clusters" not in ids(
        [record(conforming("a/wl"), "a", origin=0.0), record(quiet, "late", origin=1000.0)]
    )


def test_api_forbidden_counts_each_refusal_once_across_scenarios() -> None:
    def refused(scenario: str, shift: float) -> Story:
        story = Story(f"{scenario}/wl").created(0).nominate(0.5, f"{scenario}-w1")
        for t in (5.0, 7.0):
            story.env(
                t - shift,
                Kind.FORBIDDEN,
                user=ME,
                verb="list",
                resource="core/secrets",
                namespace="kueue-system",
                name="",
            )
        return story.place(9, f"{scenario}-w1")

    # the same two refusals, seen by a scenario that started 2 s later, on a clock 3 ms off
    records = [
        record(refused("a", 0), "a", config=["a-w1"]),
        record(refused("b", 2 - 0.003), "b", origin=1002.0, config=["b-w1"]),
    ]
    (finding,) = detect(records, CLAIMS)
    assert finding.id == "api-forbidden" and finding.scenarios == ("a", "b")
    assert "list core/secrets in kueue-system: 2 time(s)" in finding.detail
    assert "run.rbac" in finding.detail


def test_writes_refused_with_the_message_and_repeated_conflicts() -> None:
    invalid = 'Workload.kueue.x-k8s.io "job-x-1" is invalid: status.nominatedClusterNames: Too many'
    story = conforming().add(
        11, Kind.WRITE, user=ME, verb="patch", subresource="status", code=422, message=invalid
    )
    (finding,) = detect([record(story)], CLAIMS)
    assert finding.id == "writes-refused"
    assert '422 x1: Workload.kueue.x-k8s.io "…" is invalid' in finding.detail
    conflicts = conforming()
    for t in range(5):
        conflicts.write(11 + t, ME, code=409)
    (finding,) = detect([record(conflicts)], CLAIMS)
    said = "409 x6: 6 of 8 writes (75 %), up to 6 on one workload (sc/wl); 0 followed by a GET"
    assert said in finding.detail and "5 by the next write without one" in finding.detail
    assert "retries from a stale copy" in finding.detail


def test_conflicts_each_followed_by_a_get_are_told_as_races_not_a_stale_cache() -> None:
    """As the reference in kueue-admission mode showed in a burst: each 409 re-read with a
    GET, then refused again, Kueue having written meanwhile; after the fifth it backs off
    and writes from its cache, which has caught up by then."""
    conflicts = conforming()
    for t in range(5):
        conflicts.write(11 + t, ME, code=409).add(11.2 + t, Kind.READ, user=ME, verb="get")
    conflicts.write(17, ME)
    (finding,) = detect([record(conflicts)], CLAIMS)
    said = "(sc/wl); 5 followed by a GET of the Workload, 1 by the next write without one"
    assert said in finding.detail and "re-read before the retry" in finding.detail
    assert "stale copy" not in finding.detail
    # another identity's GETs do not count as the dispatcher re-reading
    others = conforming()
    for t in range(5):
        others.write(11 + t, ME, code=409).add(11.2 + t, Kind.READ, user="kueue", verb="get")
    (finding,) = detect([record(others)], CLAIMS)
    assert "0 followed by a GET" in finding.detail and "stale copy" in finding.detail


def test_a_share_of_conflicting_writes_is_told_though_no_workload_had_many() -> None:
    """As the reference in kueue-admission mode did in a burst: 234 of 1010 writes refused
    with 409, one or two on each workload, every one re-read with a GET. A conflict now
    and then, one in each of four scenarios' 3 writes, is not (4 conflicts are too few)."""
    records = []
    for i in range(5):
        story = conforming(f"s{i}/wl").add(10.7, Kind.READ, user=ME, verb="get")
        records.append(record(story, f"s{i}", origin=1000.0 + i))
    (finding,) = detect(records, CLAIMS)
    assert "409 x5: 5 of 15 writes (33 %), up to 1 on one workload" in finding.detail
    assert "5 followed by a GET of the Workload, 0 by the next write" in finding.detail
    assert finding.scenarios == ("s0", "s1", "s2", "s3", "s4")
    assert "writes-refused" not in ids(records[:4])
    # the same five conflicts among 60 writes are a conflict now and then
    busy = []
    for i in range(5):
        story = conforming(f"s{i}/wl")
        for t in range(20, 29):
            story.write(t, ME)
        busy.append(record(story, f"s{i}", origin=1000.0 + i))
    assert "writes-refused" not in ids(busy)


def test_a_write_refused_for_too_many_names_says_so_and_nothing_else() -> None:
    padded = ["sc-w1", *(f"no-such-{i}" for i in range(20))]
    invalid = (  # as the apiserver said it
        'Workload.kueue.x-k8s.io "job-x-1" is invalid: [status.nominatedClusterNames: '
        "Too many: 21: must have at most 20 items, <nil>: Invalid value: null: some "
        "validation rules were not checked because the object was invalid; correct the "
        "existing errors to complete validation]"
    )
    story = (
        Story("sc/wl")
        .created(0)
        .add(
            0.4,
            Kind.WRITE,
            user=ME,
            verb="patch",
            subresource="status",
            code=422,
            message=invalid,
            names=padded,
        )  # fmt: skip
        .write(0.8, ME, names=["sc-w1"])
        .nominate(0.9, "sc-w1")
        .place(5, "sc-w1")
    )
    (finding,) = detect([record(story, check="CORE-02", result="failed")], CLAIMS)
    assert finding.id == "nomination-list-too-long" and finding.checks == ("CORE-02",)
    assert "asked for up to 21 cluster names" in finding.detail
    assert "allows at most 20" in finding.detail
    assert (
        "refused 1 of them for too many names (422 x1: status.nominatedClusterNames: "
        "Too many: 21: must have at most 20 items)" in finding.detail
    )
    assert "<nil>" not in finding.detail and "job-x-1" not in finding.detail
    assert "Never write more than 20 names" in finding.detail


def test_a_nomination_list_of_twenty_is_within_the_limit() -> None:
    twenty = [f"sc-w{i}" for i in range(1, 21)]
    story = Story("sc/wl").created(0).write(0.4, ME, names=twenty).nominate(0.5, *twenty)
    assert ids([record(story, config=twenty)]) == []


def test_stopped_reconciling_after_the_last_request() -> None:
    story = conforming()
    story.add(20, Kind.WORKLOAD_CREATED, of="sc/late")  # nobody nominates it
    (finding,) = detect([record(story, until=100)], CLAIMS)
    assert finding.id == "stopped-reconciling"
    assert "came 30s into the run" in finding.detail and "1 workload(s)" in finding.detail
    assert ids([record(story.read(95, ME), until=100)]) == []  # still reading: not silent
    # a pending workload whose every cluster is nominated needs nothing more
    story = Story("sc/wl").created(0).write(0.4, ME, names=CONFIG).nominate(0.5, *CONFIG)
    assert ids([record(story, until=100)]) == []


def test_write_storm_when_writes_per_workload_dwarf_the_rounds() -> None:
    story = Story("sc/wl").created(0)
    for i in range(200):
        story.write(0.25 * i, ME, names=["sc-w1"])
    story.nominate(0.3, "sc-w1").read(49, ME)
    (finding,) = detect([record(story, check="CORE-09", result="failed")], CLAIMS)
    assert finding.id == "write-storm" and finding.checks == ("CORE-09",)
    assert "200 nomination write(s) for 1 workload(s)" in finding.detail
    assert "0 of them placed" in finding.detail and "stepSize 1, roundTimeout 10s" in finding.detail


def test_findings_in_a_report_pass_verify() -> None:
    pending = Story("sc/wl").created(0).read(1, ME)
    found = detect([record(pending, result="failed")], CLAIMS)
    report = Report("p", "d", findings=found, catalogue=catalogue())
    doc = report.to_dict()
    assert doc["findings"][0]["id"] == "never-nominated"
    assert not [p for p in verify_report_data(doc, catalogue()) if p.startswith("findings")]


def test_api_forbidden_leaves_out_refusals_while_the_manager_apiserver_restarts() -> None:
    def refused_at(t: float) -> Story:
        story = Story("sc/wl").created(0).nominate(0.5, "sc-w1")
        story.action(7.6, "manager-apiserver-down", how="stop")
        story.env(t, Kind.FORBIDDEN, user=ME, verb="watch", resource="kueue.x-k8s.io/clusterqueues")
        return story.action(27.7, "manager-apiserver-back").place(30, "sc-w1")

    # refused while it started (before it was ready): its RBAC caches were still empty
    assert "api-forbidden" not in ids([record(refused_at(25.5), config=["sc-w1"])])
    # refused once it was back: a privilege the dispatcher lacks
    (finding,) = detect([record(refused_at(28.0), config=["sc-w1"])], CLAIMS)
    assert finding.id == "api-forbidden"
    assert "watch kueue.x-k8s.io/clusterqueues cluster-wide: 1 time(s)" in finding.detail
