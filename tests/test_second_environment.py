"""When `mkdc run` brings up a second environment for the scenarios that run alone: one
run on an environment of its own, with scenarios of both kinds to run, on a provider that
can make one."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from harness.cluster import versions
from harness.orchestrate import run
from harness.orchestrate.options import Options
from harness.orchestrate.run import (
    _memory_short as memory_short,  # the real one: the fixture stands in
)
from harness.profile import load_profile


@pytest.fixture(autouse=True)
def memory_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not this machine's free memory: each test says how much there is where it matters."""
    monkeypatch.setattr(run, "_memory_short", lambda clusters: "")


class Provider:
    """Stands in for the local provider: `twin` and `up` are all this code calls."""

    def __init__(self) -> None:
        self.made: list[Provider] = []
        self.up_calls = 0
        self.down_calls = 0

    def twin(self, progress=None) -> Provider:
        self.made.append(Provider())
        return self.made[-1]

    def up(self) -> str:
        self.up_calls += 1
        return "the second environment"

    def down(self) -> None:
        self.down_calls += 1


class OneEnvironmentOnly:
    """A provider with no twin (kind, existing)."""


def plan(provider=None, **options) -> run.Plan:
    opts = Options(profile="reference", **options)
    defaults = versions.select(None, None)
    return run.Plan(opts, load_profile("reference"), defaults, Path("r"), provider or Provider())


def second(*plans: run.Plan) -> tuple[run.Aside | None, list[Provider]]:
    with contextlib.ExitStack() as stack:
        aside = run._second_environment(plans, stack)
        made = [m for p in plans if isinstance(p.provider, Provider) for m in p.provider.made]
    return aside, made


def test_a_whole_run_gets_one_and_takes_it_down() -> None:
    aside, made = second(plan())
    assert aside is not None and aside.env == "the second environment"
    assert [(m.up_calls, m.down_calls) for m in made] == [(1, 1)]


@pytest.mark.parametrize(
    "options",
    [
        {"environments": 1},
        {"checks": ("CORE-04", "EXT-05")},  # none runs alone
        {"checks": ("EXT-13", "EXT-14")},  # nothing to run beside them
        {"inject": ("kueue-crash",)},  # faults go into one environment
    ],
)
def test_none_where_it_would_not_help(options) -> None:
    assert second(plan(**options)) == (None, [])


def test_none_for_a_provider_that_cannot_make_one_or_runs_sharing_an_environment() -> None:
    assert second(plan(OneEnvironmentOnly())) == (None, [])
    assert second(plan(), plan()) == (None, [])


def test_asking_for_two_on_a_provider_that_cannot_is_bad_input(monkeypatch) -> None:
    monkeypatch.setattr(run, "make_provider", lambda *_: OneEnvironmentOnly())
    monkeypatch.setattr(run, "_report_dir", lambda given: given)
    with pytest.raises(run.UserError, match="--environments 2: the kind provider"):
        run.plan(Options(profile="reference", provider="kind", environments=2))


def test_none_by_default_where_memory_is_short_but_asked_for_it_is_made(monkeypatch) -> None:
    monkeypatch.setattr(run, "_memory_short", lambda clusters: "1.0 GiB of memory available")
    assert second(plan()) == (None, [])
    aside, made = second(plan(environments=2))
    assert aside is not None and len(made) == 1


class Memory:
    def __init__(self, available: int) -> None:
        self.available = available


def test_memory_is_short_below_twice_an_environment_and_the_room(monkeypatch) -> None:
    """A second 1+4 environment: 5 clusters' memory twice, and the room for the run."""
    needed = 5 * run.CLUSTER_MEMORY
    enough = 2 * needed + run.MEMORY_ROOM
    monkeypatch.setattr(run.psutil, "virtual_memory", lambda: Memory(enough))
    assert memory_short(5) == ""
    monkeypatch.setattr(run.psutil, "virtual_memory", lambda: Memory(enough - 1))
    assert "GiB of memory available" in memory_short(5)
