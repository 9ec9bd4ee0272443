"""Whether a non-root run can have the user namespaces it starts Kueue and the dispatcher
in, found out by making one before anything starts.

A runner refuses them in one of two ways: creating the namespace fails (Linux's
`user.max_user_namespaces=0` gives ENOSPC, Debian's `kernel.unprivileged_userns_clone=0`
EPERM), or creating it succeeds and writing its uid map fails (Ubuntu 23.10+'s AppArmor
restriction, `kernel.apparmor_restrict_unprivileged_userns=1`, which GitHub's
ubuntu-24.04 image keeps). Either is said in one line with the command that lifts it;
`mkdc prepare` lifts it where passwordless sudo exists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError

PROBE_SECONDS = 10.0
# A limit that leaves room for every namespace a run makes (Linux's default scales with
# memory; 15000 is what distributions that lower it usually restore)
USER_NAMESPACES = 15000


def read_sysctl(name: str) -> str | None:
    """A sysctl's value (`kernel.x` is /proc/sys/kernel/x), None when this kernel has none."""
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


@dataclass(frozen=True)
class Refusal:
    """Why this user may not have a user namespace, and what lifts it."""

    mapping: bool  # created, but its uid map refused (else: creating it refused)
    said: str  # unshare's own words
    setting: str | None  # the sysctl assignment that lifts it, None when none is known

    @property
    def fix(self) -> str:
        if self.setting is None:
            return "run mkdc as root, or on a machine that allows them"
        return f"run `sudo sysctl -w {self.setting}` (`mkdc prepare` does, with passwordless sudo)"

    def line(self) -> str:
        what = "their uid map" if self.mapping else "creating one"
        return (
            f"this machine refuses unprivileged user namespaces ({what}: {self.said}),"
            f" which a non-root run starts Kueue and the dispatcher in: {self.fix}"
        )


def classify(said: str, sysctl: Callable[[str], str | None] = read_sysctl) -> Refusal:
    """The refusal unshare's message `said` shows, with the setting that lifts it read from
    the sysctls this kernel has."""
    said = " ".join(said.split()) or "unshare failed"
    if "uid_map" in said or "gid_map" in said or "setgroups" in said:
        restricted = sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1"
        setting = "kernel.apparmor_restrict_unprivileged_userns=0" if restricted else None
        return Refusal(mapping=True, said=said, setting=setting)
    setting = None
    if sysctl("user.max_user_namespaces") == "0" or "No space left" in said:
        setting = f"user.max_user_namespaces={USER_NAMESPACES}"
    elif sysctl("kernel.unprivileged_userns_clone") == "0":
        setting = "kernel.unprivileged_userns_clone=1"
    return Refusal(mapping=False, said=said, setting=setting)


def probe() -> Refusal | None:
    """Make a user namespace with this user mapped to root in it, as a run does; None when
    that works (or the run is root's, which needs none)."""
    if os.geteuid() == 0:
        return None
    unshare = shutil.which("unshare")
    if unshare is None:
        raise UserError("the unshare command (util-linux) is missing: apt-get install util-linux")
    try:
        tried = subprocess.run(
            [unshare, "--user", "--map-root-user", "true"],
            capture_output=True,
            text=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Refusal(mapping=False, said=f"no answer in {PROBE_SECONDS:.0f}s", setting=None)
    if tried.returncode == 0:
        return None
    last = (tried.stderr.strip().splitlines() or [""])[-1]
    return classify(last.removeprefix("unshare: "))


def require() -> None:
    """A UserError naming the refusal and its fix, before anything is built or started."""
    refused = probe()
    if refused is not None:
        raise UserError(refused.line())


def prepare(say: Callable[[str], None]) -> None:
    """Lift a refusal with passwordless sudo (the setting that lifts it), then make sure it
    is lifted; a UserError when it is not or cannot be."""
    refused = probe()
    if refused is None:
        say("user namespaces: allowed")
        return
    if refused.setting is None or not _passwordless_sudo():
        raise UserError(refused.line())
    lifted = subprocess.run(
        ["sudo", "-n", "sysctl", "-w", refused.setting],
        capture_output=True,
        text=True,
        check=False,
    )
    lift = f"sudo sysctl -w {refused.setting}"
    if lifted.returncode != 0:
        raise UserError(f"{refused.line()} (`{lift}` failed: {lifted.stderr.strip()})")
    still = probe()
    if still is not None:
        raise UserError(f"after `{lift}`, {still.line()}")
    say(f"user namespaces: were refused ({refused.said}); allowed after `{lift}`")


def _passwordless_sudo() -> bool:
    if shutil.which("sudo") is None:
        return False
    try:
        return (
            subprocess.run(
                ["sudo", "-n", "true"], capture_output=True, timeout=PROBE_SECONDS, check=False
            ).returncode
            == 0
        )
    except subprocess.TimeoutExpired:
        return False
