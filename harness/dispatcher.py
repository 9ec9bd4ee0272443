"""Running an external dispatcher from its profile: start, watch, kill, restart, stop.

The command may be any executable in any language. Each replica runs with its own
least-privilege kubeconfig, in its own process group, with its log in the run
directory; the harness restarts or kills it when a check asks.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from harness.errors import UserError
from harness.kueue_install import NAMESPACE
from harness.procs import Supervisor
from harness.profile import Profile

SETTLE_SECONDS = 3.0  # a replica that is still alive this long after start counts as started


class DispatcherRunner:
    """The replicas of one external dispatcher."""

    def __init__(self, profile: Profile, supervisor: Supervisor, kubeconfigs: list[Path]) -> None:
        if profile.run is None:
            raise ValueError("a built-in dispatcher has nothing to run")
        self.profile = profile
        self.run = profile.run
        self.supervisor = supervisor
        self.kubeconfigs = kubeconfigs

    def process_name(self, replica: int) -> str:
        return f"dispatcher-{replica}"

    def start(self, replica: int) -> None:
        kubeconfig = str(self.kubeconfigs[replica])
        argv = self.profile.render_command(kubeconfig, NAMESPACE)
        env = self.profile.render_env(kubeconfig, NAMESPACE)
        env.setdefault("MKDC_REPLICA", str(replica))
        self.supervisor.start(self.process_name(replica), argv, env=env, cwd=Path.cwd())

    def start_all(self) -> None:
        """Start every replica and make sure none dies at start (exit 2 naming its log)."""
        for replica in range(self.run.replicas):
            self.start(replica)
        deadline = time.monotonic() + min(SETTLE_SECONDS, self.run.ready_timeout)
        while time.monotonic() < deadline:
            for replica in range(self.run.replicas):
                self._check(replica)
            time.sleep(0.2)

    def _check(self, replica: int) -> None:
        try:
            self.supervisor.check_alive(self.process_name(replica))
        except UserError as exc:
            raise UserError(f"the dispatcher {exc}") from None

    def kill(self, replica: int = 0) -> None:
        """SIGKILL, as a crash would."""
        self.supervisor.stop(self.process_name(replica), sig=signal.SIGKILL, grace=0)

    def restart(self, replica: int = 0) -> None:
        self.start(replica)

    def alive(self, replica: int = 0) -> bool:
        proc = self.supervisor.procs.get(self.process_name(replica))
        return bool(proc and proc.alive())
