"""A dispatcher that leans on what a kubelet promises its container.

It claims a fixed path in /tmp (a twin sharing its /tmp finds the claim and exits), is
ready only once it wrote /tmp/ready a few seconds after its start (its exec readiness
probe reads that file, inside its own view), and, as the last replica, exits 20 s after
its start (restartPolicy Always must start it again). Meanwhile it dispatches as the
reference does, in a child process, with the arguments it was given.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

CLAIM = Path("/tmp/mkdc-tenant.claim")
READY = Path("/tmp/ready")
READY_AFTER = 3.0
EXIT_AFTER = float(os.environ.get("TENANT_EXIT_AFTER", "20"))


def main(argv: list[str]) -> int:
    if CLAIM.exists():
        print(f"error: collision: {CLAIM} holds {CLAIM.read_text()!r}", file=sys.stderr)
        return 1
    me = os.environ.get("POD_NAME", "?")
    CLAIM.write_text(me)
    child = subprocess.Popen([sys.executable, "-m", "dispatchers.reference", *argv])
    time.sleep(READY_AFTER)
    READY.write_text(me)
    last = me.endswith(f"-{int(os.environ.get('TENANT_REPLICAS', '2')) - 1}")
    deadline = time.monotonic() + (EXIT_AFTER - READY_AFTER if last else float("inf"))
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    if child.poll() is None:
        print(f"error: exiting {EXIT_AFTER:.0f} s after its start, on purpose", file=sys.stderr)
        child.terminate()
        child.wait(10)
        return 1
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
