"""How a refused user namespace is told apart and what the one line says."""

from __future__ import annotations

import pytest

from harness.cluster import userns


def sysctls(**values: str):
    table = {k.replace("__", "."): v for k, v in values.items()}
    return lambda name: table.get(name)


@pytest.mark.parametrize(
    ("said", "table", "mapping", "setting"),
    [
        (  # Linux's limit
            "unshare failed: No space left on device",
            sysctls(user__max_user_namespaces="0"),
            False,
            "user.max_user_namespaces=15000",
        ),
        (  # Debian's switch
            "unshare failed: Operation not permitted",
            sysctls(kernel__unprivileged_userns_clone="0", user__max_user_namespaces="63000"),
            False,
            "kernel.unprivileged_userns_clone=1",
        ),
        (  # Ubuntu's AppArmor restriction
            "write failed /proc/self/uid_map: Operation not permitted",
            sysctls(kernel__apparmor_restrict_unprivileged_userns="1"),
            True,
            "kernel.apparmor_restrict_unprivileged_userns=0",
        ),
        (  # refused for a reason no setting names (a container's seccomp, unmapped ids)
            "unshare failed: Operation not permitted",
            sysctls(user__max_user_namespaces="63000"),
            False,
            None,
        ),
        (
            "cannot open /proc/self/uid_map: Read-only file system",
            sysctls(),
            True,
            None,
        ),
    ],
)
def test_a_refusal_is_told_by_what_unshare_said_and_the_kernels_settings(
    said, table, mapping, setting
) -> None:
    refusal = userns.classify(said, table)
    assert (refusal.mapping, refusal.setting) == (mapping, setting)
    line = refusal.line()
    assert "\n" not in line and "unprivileged user namespaces" in line and said in line
    if setting:
        assert f"sudo sysctl -w {setting}" in line
    else:
        assert "run mkdc as root" in line


def test_root_needs_no_user_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(userns.os, "geteuid", lambda: 0)
    monkeypatch.setattr(userns.subprocess, "run", None)  # nothing is tried
    assert userns.probe() is None
