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
