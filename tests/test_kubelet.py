"""A kubelet's probes and resource figures for replicas on this host: real probes against
a real HTTP server and a real command, a fake replica around them."""

from __future__ import annotations

import http.server
import os
import threading
import time
from collections.abc import Iterator

import pytest

from harness.cluster import probes
from harness.cluster.probes import Probe
from harness.orchestrate.kubelet import Kubelet
from harness.profile.deploy import Pod, Resources


class Health(http.server.BaseHTTPRequestHandler):
    healthy = True

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.send_response(200 if Health.healthy else 500)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    Health.healthy = True
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def pod(**fields: object) -> Pod:
    base: dict[str, object] = dict(
        deployment="d", container="c", replicas=1, command=None, args=(), env={},
        pod_fields={}, mounts=(), working_dir=None, image=None, host_network=False,
    )  # fmt: skip
    return Pod(**{**base, **fields})  # type: ignore[arg-type]


def test_each_handler_succeeds_and_fails_as_the_kubelets(server: int) -> None:
    host = probes.Target(pid=None)
    assert probes.run(Probe("httpGet", port=server, path="/healthz"), host) is None
    Health.healthy = False
    said = probes.run(Probe("httpGet", port=server, path="/healthz"), host)
    assert said == f"httpGet http://:{server}/healthz: HTTP status 500"
    assert probes.run(Probe("tcpSocket", port=server), host) is None
    assert probes.run(Probe("exec", command=("true",)), host) is None
    failed = probes.run(Probe("exec", command=("sh", "-c", "echo not yet; exit 3")), host)
    assert failed == "exec sh -c echo not yet; exit 3: exit code 3: not yet"


def test_readiness_passes_after_its_threshold_and_liveness_stops_the_replica(
    server: int,
) -> None:
    readiness = Probe("httpGet", port=server, period=1, success_threshold=2)
    liveness = Probe("tcpSocket", port=server, period=1, failure_threshold=2)
    stopped: list[tuple[int, str]] = []
    kubelet = Kubelet(
        pod(readiness=readiness, liveness=liveness),
        1,
        pid=lambda r: os.getpid(),
        stop=lambda r, why: stopped.append((r, why)),
        target=lambda r: probes.Target(pid=None),
    )
    kubelet.look(now=0)
    assert not kubelet.ready(0)  # one success of two
    kubelet.look(now=1)
    assert kubelet.ready(0)
    Health.healthy = False
    kubelet.look(now=2)
    assert kubelet.readiness_failure(0).endswith("HTTP status 500")
    assert not stopped  # the TCP port still answers
    closed = Probe("tcpSocket", port=1, period=1, failure_threshold=2)
    kubelet.pod = pod(liveness=closed)
    kubelet._fresh(0, 3)
    kubelet.look(now=3)
    assert not stopped
    kubelet.look(now=4)
    assert stopped and stopped[0][1].startswith("its liveness probe failed: tcpSocket :1")


def test_peaks_beside_requests_and_limits_and_over_the_limit_named() -> None:
    resources = Resources(requests={"memory": 64 * 2**20}, limits={"memory": 1024})
    kubelet = Kubelet(
        pod(resources=resources), 1, pid=lambda r: os.getpid(), stop=lambda r, w: None,
        target=lambda r: probes.Target(pid=None),
    )  # fmt: skip
    kubelet.look(now=0)
    began = time.process_time()
    while time.process_time() - began < 0.1:  # some CPU between two samples (ticks of 10 ms)
        pass
    kubelet.look(now=1)
    [entry] = kubelet.report()
    assert entry["peakMemoryBytes"] > 1024 and entry["overMemoryLimit"] is True
    assert entry["peakCpuCores"] > 0 and entry["requests"] == {"memory": 64 * 2**20}
