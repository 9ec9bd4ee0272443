"""The reference dispatcher's request accounting and its separate limit for Events."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from dispatchers.reference.kube import Kube
from dispatchers.reference.workqueue import TokenBucket


class Bucket(TokenBucket):
    def __init__(self) -> None:
        super().__init__(1.0, 1, clock=lambda: 0.0, sleep=lambda _: None)
        self.taken = 0

    def take(self) -> None:
        self.taken += 1


def test_timings_count_this_threads_requests_and_reset() -> None:
    kube = Kube(client.ApiClient(), Bucket())
    assert kube._call("get", "workloads", "ns", lambda: 1) == 1
    kube._call("get", "workloads", "ns", lambda: 2)
    spent = kube.take_timings()
    assert spent["requests"] == 2 and spent["api_s"] >= 0 and spent["throttled_s"] >= 0
    assert kube.take_timings()["requests"] == 0


def test_events_take_their_own_tokens() -> None:
    writes, events = Bucket(), Bucket()
    kube = Kube(client.ApiClient(), writes, events)
    sent: list[Any] = []
    kube.custom.create_namespaced_custom_object = lambda *a, **k: sent.append(a)  # type: ignore[method-assign]
    meta = {"name": "wl", "namespace": "ns", "uid": "u", "resourceVersion": "1"}
    kube.event({"metadata": meta}, "Nominated", "why", "me")
    assert (writes.taken, events.taken, len(sent)) == (0, 1, 1)
    kube._call("patch", "workloads", "ns", lambda: None)
    assert (writes.taken, events.taken) == (1, 1)


def test_a_403_is_fatal_at_once_unless_the_same_requests_were_allowed_before() -> None:
    from dispatchers.reference.kube import ForbiddenGrace

    now = [0.0]
    grace = ForbiddenGrace(seconds=30, clock=lambda: now[0])
    assert grace.fatal()  # never allowed: a missing permission, said at start
    grace.allowed()
    assert not grace.fatal()  # the apiserver just restarted: its RBAC caches are empty
    now[0] = 29.0
    assert not grace.fatal()
    now[0] = 30.0
    assert grace.fatal()  # 403s for 30 s with nothing allowed: a permission was taken away
    grace.allowed()
    assert not grace.fatal()


def test_an_informer_rides_out_the_403s_of_a_restarted_apiserver() -> None:
    import threading

    from dispatchers.reference.kube import Forbidden, Informer

    class Restarting:
        """Lists once, then its watch meets a 403 twice (RBAC caches not synced), then
        serves: a second list returns the workload again."""

        def __init__(self) -> None:
            self.lists = self.watches = 0

        def list(self, plural: str) -> tuple[list[dict[str, Any]], str]:
            self.lists += 1
            return [{"metadata": {"name": "a", "namespace": "ns"}}], str(self.lists)

        def watch(self, plural: str, rv: str):
            self.watches += 1
            if self.watches <= 2:
                raise Forbidden("missing permission: watch workloads")
            stop.set()
            return iter(())

    stop, fatal = threading.Event(), list[Exception]()
    kube: Any = Restarting()
    inf = Informer(kube, "workloads", lambda kind, obj: None, fatal.append, stop)
    inf._pause = lambda backoff, err: backoff  # type: ignore[method-assign]
    inf.run()
    assert fatal == [] and kube.watches == 3

    class Refusing(Restarting):
        def list(self, plural: str) -> tuple[list[dict[str, Any]], str]:
            raise Forbidden("no list")

    refusing: Any = Refusing()
    stop = threading.Event()
    never_allowed = Informer(refusing, "workloads", lambda kind, obj: None, fatal.append, stop)
    never_allowed.run()
    assert [str(e) for e in fatal] == ["no list"]
