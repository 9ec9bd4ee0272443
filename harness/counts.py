"""Counts a user gives (workers, scenarios at once), from the command line or a plan file.

Why a module of its own: `mkdc`'s argument parser checks them at start-up, and the run's
modules, which load the Kubernetes client, are imported only by the command that runs.
"""

from __future__ import annotations

MAX_COUNT = 64  # workers or parallel scenarios: far more than a machine runs


def valid_count(value: object) -> bool:
    """A whole number (not a bool) from 1 to MAX_COUNT."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_COUNT
