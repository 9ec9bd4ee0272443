"""The conformance scenarios run only inside a session made by `mkdc run`."""

from __future__ import annotations

import os

collect_ignore = [] if os.environ.get("MKDC_SESSION") else ["conformance"]
