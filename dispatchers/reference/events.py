"""Kubernetes Events posted off the reconcile path.

Why: an Event is an explanation, not part of the decision; posting it inline made every
nomination wait for one more API round trip. Like client-go's event broadcaster, events go
through a bounded queue to one sender thread and are dropped (and counted) when the queue is
full, so a burst of decisions never blocks on them.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

from dispatchers.reference.kube import Forbidden, ForbiddenGrace

log = logging.getLogger("mkdc.reference")
Post = Callable[[Mapping[str, Any], str, str], None]  # (workload, reason, message)


class EventSink:
    def __init__(
        self,
        post: Post,
        on_forbidden: Callable[[Exception], None],
        capacity: int = 1000,
        on_drop: Callable[[], None] = lambda: None,
    ) -> None:
        self._post, self._on_forbidden, self._on_drop = post, on_forbidden, on_drop
        self.grace = ForbiddenGrace()
        self._queue: queue.Queue[tuple[Mapping[str, Any], str, str]] = queue.Queue(capacity)
        self.dropped = 0

    def emit(self, workload: Mapping[str, Any], reason: str, message: str) -> None:
        try:
            self._queue.put_nowait((workload, reason, message))
        except queue.Full:
            self.dropped += 1
            self._on_drop()

    def run(self, stop: threading.Event) -> None:
        """Post queued events until ``stop`` is set."""
        while not stop.is_set():
            try:
                item = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            self._send(*item)

    def drain(self) -> None:
        """Post everything queued now, in this thread."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            self._send(*item)

    def _send(self, workload: Mapping[str, Any], reason: str, message: str) -> None:
        try:
            self._post(workload, reason, message)
            self.grace.allowed()
        except Forbidden as err:  # a missing permission stops the dispatcher, loudly
            if self.grace.fatal():
                self._on_forbidden(err)
            else:  # an apiserver just restarted: this Event is lost, as any failed one
                log.warning("event not recorded (403)", extra={"error": str(err)[:200]})
        except Exception as err:  # an Event is best effort
            log.warning("event not recorded", extra={"error": str(err)[:200]})
