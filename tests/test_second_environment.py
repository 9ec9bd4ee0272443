"""When `mkdc run` brings up a second environment for the scenarios that run alone: one
run on an environment of its own, with scenarios of both kinds to run, on a provider that
can make one."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import cast

import pytest

from harness.cluster import versions
from harness.cluster.environment import Environment
from harness.errors import UserError
from harness.orchestrate import environments, plan
from harness.orchestrate.environments import (
    memory_short,  # the real one: the fixture stands in
)
from harness.orchestrate.options import Options
from harness.profile import load_profile
from harness.providers import Twins


@pytest.fixture(autouse=True)
def memory_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not this machine's free memory: each test says how much there is where it matters."""
    monkeypatch.setattr(environments, "memory_short", lambda clusters: "")


class OneEnvironmentOnly:
    """A provider with no twin (kind, existing); its environment is its name."""

    capabilities: frozenset[str] = frozenset()
    discards_clusters = True

    def __init__(self, name: str = "the first environment", fails: bool = False) -> None:
        self.name, self.fails = name, fails
        self.up_calls = 0
        self.down_calls = 0

    def up(self) -> Environment:
        self.up_calls += 1
        if self.fails:
            raise UserError(f"{self.name} failed")
        return cast(Environment, self.name)

    def down(self) -> None:
        self.down_calls += 1

    def interrupt(self, process: str, how: str) -> None:
        raise UserError("cannot")

    def resume(self, process: str) -> None:
        raise UserError("cannot")


class Provider(OneEnvironmentOnly):
    """Stands in for the local provider: one that makes a twin."""

    worker_names = ["w1", "w2"]

    def __init__(self, name: str = "the first environment", fails: bool = False) -> None:
        super().__init__(name, fails)
        self.made: list[Provider] = []

    def twin(self, progress=None) -> Provider:
        self.made.append(Provider("the second environment"))
        return self.made[-1]


def test_the_stand_ins_are_what_they_stand_for() -> None:
    assert isinstance(Provider(), Twins) and not isinstance(OneEnvironmentOnly(), Twins)


def a_plan(provider=None, **options) -> plan.Plan:
    opts = Options(profile="reference", **options)
    defaults = versions.select(None, None)
    return plan.Plan(opts, load_profile("reference"), defaults, Path("r"), provider or Provider())


def second(*plans: plan.Plan) -> tuple[environments.Aside | None, list[Provider]]:
    with contextlib.ExitStack() as stack:
        env, aside = environments.bring_up(plans, plans[0].provider, stack)
        assert env == "the first environment"
        made = [m for p in plans if isinstance(p.provider, Provider) for m in p.provider.made]
    return aside, made


def test_a_whole_run_gets_one_and_takes_both_down() -> None:
    first = Provider()
    aside, made = second(a_plan(first))
    assert aside is not None and aside.env == "the second environment"
    assert [(m.up_calls, m.down_calls) for m in (first, *made)] == [(1, 1), (1, 1)]


def test_either_bring_up_failing_takes_both_down() -> None:
    """The first one's failure waits for the second's bring-up, then stops it too."""
    first = Provider(fails=True)
    with pytest.raises(UserError, match="the first environment failed"):
        second(a_plan(first))
    assert [(m.up_calls, m.down_calls) for m in (first, *first.made)] == [(1, 1), (1, 1)]

    class FailingTwin(Provider):
        def twin(self, progress=None) -> Provider:
            self.made.append(Provider("the second environment", fails=True))
            return self.made[-1]

    first = FailingTwin()
    with pytest.raises(UserError, match="the second environment failed"):
        second(a_plan(first))
    assert [(m.up_calls, m.down_calls) for m in (first, *first.made)] == [(1, 1), (1, 1)]


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
    assert second(a_plan(**options)) == (None, [])


def test_none_for_a_provider_that_cannot_make_one_or_runs_sharing_an_environment() -> None:
    assert second(a_plan(OneEnvironmentOnly())) == (None, [])
    assert second(a_plan(), a_plan()) == (None, [])


def test_asking_for_two_on_a_provider_that_cannot_is_bad_input(monkeypatch) -> None:
    monkeypatch.setattr(plan, "make_provider", lambda *_: OneEnvironmentOnly())
    monkeypatch.setattr(plan, "report_directory", lambda given: given)
    with pytest.raises(UserError, match="--environments 2: the kind provider"):
        plan.plan(Options(profile="reference", provider="kind", environments=2))


def test_none_by_default_where_memory_is_short_but_asked_for_it_is_made(monkeypatch) -> None:
    monkeypatch.setattr(
        environments, "memory_short", lambda clusters: "1.0 GiB of memory available"
    )
    aside, made = second(a_plan())
    assert aside is None and [m.up_calls for m in made] == [0]  # made, never brought up
    aside, made = second(a_plan(environments=2))
    assert aside is not None and [m.up_calls for m in made] == [1]


class Memory:
    def __init__(self, available: int) -> None:
        self.available = available


def test_memory_is_short_below_three_environments_and_the_room(monkeypatch) -> None:
    """Two 1+4 environments brought up together, as much again as one to spare for the
    runs beside them, and the room."""
    needed = 5 * environments.CLUSTER_MEMORY
    enough = 3 * needed + environments.MEMORY_ROOM
    monkeypatch.setattr(environments.psutil, "virtual_memory", lambda: Memory(enough))
    assert memory_short(5) == ""
    monkeypatch.setattr(environments.psutil, "virtual_memory", lambda: Memory(enough - 1))
    assert "GiB of memory available" in memory_short(5)
