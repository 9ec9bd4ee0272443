"""What a catalogue entry declares beside its name: whose each of its bounds is, and the
Kueue feature gates in whose state the dispatcher can be seen at all.

The suite declares them on each check; the harness shows the bounds (`mkdc checks`, the
report) and starts Kueue with the gates as the checks need them."""

from __future__ import annotations

from typing import Literal, NamedTuple

Owner = Literal["KEP", "Kueue API", "mkdc"]
OWNERS: dict[Owner, str] = {
    "KEP": "Kueue's MultiKueue KEP (keps/693-multikueue, the dispatcher API) says it",
    "Kueue API": "Kueue's Workload API refuses anything else (CRD validation, webhook)",
    "mkdc": "mkdc's own reading, stricter or more precise than the KEP",
}


class Bound(NamedTuple):
    """One bound a check judges by: what it is, whose it is, and why it is so."""

    owner: Owner
    what: str
    why: str

    def said(self) -> str:
        return f"{self.owner}: {self.what} ({self.why})"


class GateNeed(NamedTuple):
    """A Kueue feature gate whose other state hides what the check judges."""

    gate: str
    state: bool  # the state in which the dispatcher can be seen
    why: str  # what the other state does

    def unmet(self, gates: dict[str, bool] | None) -> str:
        """Why the check cannot be decided under `gates` (the Kueue's, as run), or ""
        (the gate as needed, or not known to that Kueue: it then behaves as needed)."""
        if not gates or self.gate not in gates or gates[self.gate] == self.state:
            return ""
        word = "on" if gates[self.gate] else "off"
        return f"Kueue's feature gate {self.gate} was {word} in the Kueue under test: {self.why}"
