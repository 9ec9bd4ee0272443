"""A runner that refuses unprivileged user namespaces, made for real on this kernel (run as
root): a command run through `Refusing.wrap` is refused a user namespace of its own as a
hosted runner refuses it, in one of three ways.

- `limit`: `user.max_user_namespaces=0` (creating one: ENOSPC), in a user namespace of its
  own that maps every id as it is (sudo works there), so the host's limit is untouched
  and `sudo sysctl -w user.max_user_namespaces=N` on the runner lifts it, as on a real one.
  One namespace holds for the whole job (a holder process), so a lift lasts.
- `unmapped`: the runner's ids have no mapping where it runs (a user namespace it made
  itself, unmapped), so the kernel refuses creating a child (EPERM), as Debian's
  `kernel.unprivileged_userns_clone=0` does. Nothing lifts it; sudo does not work there.
- `uidmap`: creating one succeeds and writing its uid map fails: /proc is read-only in the
  command's mount namespace, so the write is refused (EROFS where Ubuntu's AppArmor gives
  EPERM; the same step refused). Nothing lifts it here.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

FORMS = ("limit", "unmapped", "uidmap")


@dataclass
class Refusing:
    form: str
    holder: int | None = None  # the `limit` form's namespace, held by this process

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` (run by root: `sudo -u USER env ...`) refused user namespaces."""
        if self.form == "limit":
            return ["nsenter", f"--user=/proc/{self.holder}/ns/user", "--", *argv]
        if self.form == "unmapped":
            # the runner's own command makes the namespace it runs in, unmapped
            return [
                *argv[: argv.index("env")],
                "unshare",
                "--user",
                "--",
                *argv[argv.index("env") :],
            ]
        ro_proc = 'mount -o remount,bind,ro /proc && exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", ro_proc, "sh", *argv]


@contextlib.contextmanager
def refusing(form: str) -> Iterator[Refusing]:
    """The refusal `form`, for as long as the block runs."""
    if form not in FORMS:
        raise ValueError(form)
    if form != "limit":
        yield Refusing(form)
        return
    holder = subprocess.Popen(["unshare", "--user", "sleep", "infinity"])
    try:
        own = os.readlink("/proc/self/ns/user")
        while os.readlink(f"/proc/{holder.pid}/ns/user") == own:
            pass
        for name in ("uid_map", "gid_map"):
            fd = os.open(f"/proc/{holder.pid}/{name}", os.O_WRONLY)
            try:  # every id as it is
                os.write(fd, b"0 0 4294967295\n")
            finally:
                os.close(fd)
        subprocess.run(
            ["nsenter", f"--user=/proc/{holder.pid}/ns/user", "--", "sysctl", "-qw"]
            + ["user.max_user_namespaces=0"],
            check=True,
        )
        yield Refusing(form, holder.pid)
    finally:
        holder.kill()
        holder.wait()
