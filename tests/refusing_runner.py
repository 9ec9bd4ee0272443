"""A runner that refuses unprivileged user namespaces, made for real on this kernel (run as
root): a command run through `Refusing.wrap` is refused a user namespace of its own as a
hosted runner refuses it, in one of three ways.

- `limit`: `user.max_user_namespaces=0` (creating one: ENOSPC), in a user namespace of its
  own that maps root and the runner's ids as they are, so the host's limit is untouched
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

    def wrap(self, argv: list[str], user: str) -> list[str]:
        """`argv` (run by root, as `sudo -u USER ...` is) refused user namespaces."""
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
def refusing(form: str, uid: int, gid: int) -> Iterator[Refusing]:
    """The refusal `form` for the user of `uid` and `gid`, for as long as the block runs."""
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
        for name, outer in (("uid_map", uid), ("gid_map", gid)):
            fd = os.open(f"/proc/{holder.pid}/{name}", os.O_WRONLY)
            try:  # one write: a map is written whole or not at all
                os.write(fd, f"0 0 1\n{outer} {outer} 1\n".encode())
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
