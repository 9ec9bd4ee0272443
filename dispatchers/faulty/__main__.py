"""``python -m dispatchers.faulty --fault NAME [reference flags...]``: the reference
dispatcher with one fault injected (see ``faults.py``).

Every other flag, the exit status and the log format are the reference's; an unknown
fault name is a usage error (exit 2, one line on stderr).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from dispatchers.faulty.faults import FAULTS, Fault


def split_fault(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """(fault name, the remaining reference flags); ``--fault NAME`` or ``--fault=NAME``."""
    rest, name, args = [], None, list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--fault" and args:
            name = args.pop(0)
        elif arg.startswith("--fault="):
            name = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return name, rest


def factory(fault: Fault) -> Any:
    """A controller factory for the reference ``main``: the fault's planner and class."""

    def make(settings: Any, kube: Any, metrics: Any, elector: Any, stop: Any) -> Any:
        logging.getLogger("mkdc.faulty").warning(
            "FAULTY dispatcher", extra={"fault": fault.name, "breaks": fault.breaks}
        )
        return fault.controller(settings, kube, metrics, elector, stop, planner=fault.planner())

    return make


def main(argv: Sequence[str] | None = None) -> int:
    name, rest = split_fault(sys.argv[1:] if argv is None else argv)
    if name not in FAULTS:
        known = ", ".join(FAULTS)
        print(
            f"mkdc-faulty-dispatcher: --fault: {name!r} is not a fault ({known})", file=sys.stderr
        )
        return 2
    from dispatchers.reference.__main__ import main as reference_main

    return reference_main(rest, controller_factory=factory(FAULTS[name]))


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # daemon threads may sit in blocking watch reads: do not wait for them
