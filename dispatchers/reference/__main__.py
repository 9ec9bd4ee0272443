"""``python -m dispatchers.reference [flags]`` runs the dispatcher;
``python -m dispatchers.reference explain NAMESPACE/WORKLOAD [flags]`` explains one workload.

Exit status: 0 on a clean stop (SIGTERM/SIGINT), 2 for bad settings or a missing permission
(one clear line on stderr), 1 for anything unexpected.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from dispatchers.reference.settings import Settings, SettingsError, load_settings

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and every ``extra`` field."""

    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        data.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def _setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(
    argv: Sequence[str] | None = None, controller_factory: Callable[..., Any] | None = None
) -> int:
    """``controller_factory(settings, kube, metrics, elector, stop)`` replaces ``Controller``
    (the faulty dispatchers inject their one fault this way)."""
    args = list(sys.argv[1:] if argv is None else argv)
    explain_target = None
    if args and args[0] == "explain":
        if len(args) < 2 or "/" not in args[1]:
            print(
                "usage: python -m dispatchers.reference explain NAMESPACE/WORKLOAD [flags]",
                file=sys.stderr,
            )
            return 2
        explain_target, args = args[1], args[2:]
    try:
        settings = load_settings(args)
    except SettingsError as err:
        print(f"mkdc-reference-dispatcher: {err}", file=sys.stderr)
        return 2
    from dispatchers.reference.kube import Forbidden

    try:
        if explain_target is not None:
            from dispatchers.reference.explain import explain_workload

            print(explain_workload(settings, explain_target))
            return 0
        return _run(settings, controller_factory)
    except Forbidden as err:
        print(f"mkdc-reference-dispatcher: {err}", file=sys.stderr)
        return 2


def _run(settings: Settings, controller_factory: Callable[..., Any] | None = None) -> int:
    from dispatchers.reference.controller import Controller
    from dispatchers.reference.kube import Kube, connect
    from dispatchers.reference.leader import KubeLeaseStore, LeaderElector
    from dispatchers.reference.metrics import Metrics
    from dispatchers.reference.workqueue import TokenBucket

    _setup_logging(settings.log_level)
    log = logging.getLogger("mkdc.reference")
    api = connect(settings.kubeconfig, pool_size=settings.workers + 12)  # + watches, events
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    elector = None
    if settings.leader_elect:
        identity = settings.identity or f"{socket.gethostname()}_{os.getpid()}"
        store = KubeLeaseStore(api, settings.lease_name, settings.lease_namespace)
        elector = LeaderElector(store, identity, settings.lease_duration)
    metrics = Metrics()
    metrics.serve(settings.metrics_port)
    kube = Kube(
        api,
        TokenBucket(settings.kube_qps, settings.kube_burst),
        TokenBucket(settings.event_qps, settings.event_burst),
    )
    controller = (controller_factory or Controller)(settings, kube, metrics, elector, stop)
    log.info("starting", extra={"settings": {k: str(v) for k, v in vars(settings).items()}})
    threads = controller.start()
    while not stop.wait(1.0):
        pass
    controller.queue.shutdown()
    for thread in threads:
        if thread.name == "leader":
            thread.join(timeout=5)  # releases the lease
    if controller.fatal:
        print(f"mkdc-reference-dispatcher: {controller.fatal}", file=sys.stderr)
        log.error("stopping", extra={"error": controller.fatal})
        return 2
    log.info("stopped")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # daemon threads may sit in blocking watch reads: do not wait for them
