"""Prometheus metrics of the reference dispatcher (served on 127.0.0.1 only).

Why these: rounds and nominations show fan-out per workload; the two histograms are the
scorecard's "time to first nomination" and "time to placement", measured from the Workload's
creation, as the dispatcher sees them.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.nominations = Counter(
            "mkdc_reference_nominations", "nominatedClusterNames writes", ["mode"], registry=r
        )
        self.rounds = Counter("mkdc_reference_rounds", "dispatch rounds started", registry=r)
        self.failures = Counter(
            "mkdc_reference_failures", "failures recorded (eviction, provisioning)", registry=r
        )
        self.conflicts = Counter(
            "mkdc_reference_conflicts", "writes refused with 409 and retried", registry=r
        )
        self.first_nomination = Histogram(
            "mkdc_reference_time_to_first_nomination_seconds",
            "workload creation to its first nomination",
            buckets=BUCKETS,
            registry=r,
        )
        self.placement = Histogram(
            "mkdc_reference_time_to_placement_seconds",
            "workload creation to status.clusterName set",
            buckets=BUCKETS,
            registry=r,
        )
        self.escalation_wait = Histogram(
            "mkdc_reference_escalation_wait_seconds",
            "an escalation's wait for a free escalation write (--escalation-writes)",
            buckets=BUCKETS,
            registry=r,
        )
        self.events_dropped = Counter(
            "mkdc_reference_events_dropped",
            "Events not posted: the event queue was full",
            registry=r,
        )
        self.leader = Gauge("mkdc_reference_leader", "1 while this replica leads", registry=r)

    def serve(self, port: int) -> None:
        """Start the endpoint on 127.0.0.1:port (0: no endpoint)."""
        if port:
            start_http_server(port, addr="127.0.0.1", registry=self.registry)
