"""Errors the user can fix; the CLI turns them into one line on stderr and exit 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input (profile, kubeconfig, missing binary, port in use), not a harness bug.

    The message must be one line that says what is wrong and where, so the CLI can
    print it as is (no traceback) and exit with status 2.
    """


class EnvironmentLimit(Exception):
    """The environment cannot set up what a scenario needs (e.g. this Kueue version does
    not keep a cluster inactive): its checks are reported skipped with this reason, never
    passed or failed."""
