"""report.html as a person sees it: rendered by a headless Chromium at 1280x900, the
verdict and the first failed check must be on the first screen, and the page must read
top-down (checks, then the scorecard, then the environment).

Positions come from a copy of the page with a small script that writes the layout into
the DOM (`--dump-dom`); the screenshot is of the page itself. Needs Debian's chromium
(`apt-get install chromium`; .ci/run installs it)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.report import write_html
from harness.report.style import CSS
from harness.report.timeline_svg import svg_timeline
from suites.checks import CATALOGUE
from tests import reports

CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1280, 900
TIMEOUT = 90  # seconds for one page; it takes 1-2 s on an idle 2-core machine

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"
)

# Written into the test copy only: where each check section, its badge and each h2 are.
PROBE = """<script>
(function () {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const checks = [...document.querySelectorAll("section.check")].map((s) => {
    const badge = s.querySelector("h3 .badge");
    return {id: s.id, result: badge.textContent.trim(), heading: box(s.querySelector("h3")),
            badge: box(badge)};
  });
  const headings = [...document.querySelectorAll("h2")].map(
    (h) => ({text: h.textContent.trim(), top: box(h).top}));
  document.documentElement.setAttribute("data-probe", JSON.stringify(
    {viewport: {width: innerWidth, height: innerHeight}, checks, headings}));
})();
</script>"""
PROBE_RE = re.compile(r'<html[^>]*\sdata-probe="([^"]*)"')


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory removed afterwards whatever happens (the page, the browser's profile)."""
    path = Path(tempfile.mkdtemp(prefix="mkdc-browser-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def chromium(scratch: Path, url: str, *args: str) -> str:
    """Run headless Chromium once on `url` in a fresh profile; its stdout. The browser
    runs in its own process group, killed afterwards, so no helper process outlives it."""
    home = Path(tempfile.mkdtemp(prefix="chromium-", dir=scratch))
    argv = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={home / 'profile'}",
        f"--window-size={WIDTH},{HEIGHT}",
        *args,
        url,
    ]
    # its crash database and dconf cache would otherwise go to the user's home
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config")}
    env["XDG_CACHE_HOME"] = str(home / "cache")
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"chromium did not finish {url} within {TIMEOUT}s")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # killed ones may take a moment to go
    left = [p for p in psutil.process_iter(["cmdline"]) if str(home) in " ".join(_argv(p))]
    _gone, alive = psutil.wait_procs(left, timeout=10)
    assert not alive, f"chromium processes left behind: {[p.pid for p in alive]}"
    assert proc.returncode == 0, f"chromium exited {proc.returncode}: {err[-2000:]}"
    return out


def _argv(process: psutil.Process) -> list[str]:
    return process.info.get("cmdline") or []


def layout(scratch: Path, page: Path) -> dict[str, Any]:
    """Where things are on the page at 1280x900, measured in a copy with the probe."""
    probe = scratch / "probe.html"
    text = page.read_text(encoding="utf-8")
    head, body_end, tail = text.rpartition("</body>")
    assert body_end, "report.html has no </body>"
    probe.write_text(head + PROBE + body_end + tail, encoding="utf-8")
    dom = chromium(scratch, probe.as_uri(), "--dump-dom")
    found = PROBE_RE.search(dom)
    assert found, f"the probe wrote nothing: {dom[:500]}"
    return dict(json.loads(html.unescape(found[1])))


RANK = {"failed": 0, "undecided": 1, "passed": 2, "skipped": 3, "not-supported": 4}


def test_the_first_screen_shows_the_verdict_and_the_first_failed_check(scratch: Path) -> None:
    page = write_html(reports.report(), scratch / "report.html")
    where = layout(scratch, page)
    # the first screen: the window's viewport (its height less what headless Chromium
    # keeps for a browser's bars, as in a real 900 px window)
    screen = where["viewport"]["height"]
    assert where["viewport"]["width"] == WIDTH and 600 <= screen <= HEIGHT
    checks = where["checks"]
    assert len(checks) == len(CATALOGUE)
    first = next(c for c in checks if c["result"] == "failed")
    assert first["heading"]["bottom"] <= screen, (
        f"the first failed check ({first['id']}) starts {first['heading']['top']:.0f} px "
        f"down, below the first {screen} px screen"
    )
    # failed first, then undecided, passed, skipped, not supported last
    assert [c["result"] for c in checks] == sorted(
        (c["result"] for c in checks), key=RANK.__getitem__
    )
    assert checks[0] == first and first["id"] == "CORE-05"
    order = [h["text"].split()[0] for h in sorted(where["headings"], key=lambda h: h["top"])]
    assert order.index("Checks") < order.index("Scorecard") < order.index("Environment")

    # the picture: a real page (not blank), and the red "failed" badge where the DOM says
    shot = scratch / "report.png"
    chromium(scratch, page.as_uri(), f"--screenshot={shot}")
    from PIL import Image

    with Image.open(shot) as image:
        rgb = image.convert("RGB")
    assert rgb.size == (WIDTH, HEIGHT)
    colours = rgb.getcolors(maxcolors=WIDTH * HEIGHT) or []
    assert len(colours) > 50, "the screenshot is (nearly) blank"
    badge = first["badge"]
    crop = rgb.crop(
        (int(badge["left"]), int(badge["top"]), int(badge["right"]), int(badge["bottom"]))
    )
    failed_background = (0xFD, 0xE0, 0xE0)
    inside = dict((c, n) for n, c in crop.getcolors(maxcolors=crop.width * crop.height) or [])
    assert inside.get(failed_background, 0) > crop.width * crop.height / 4, (
        "no red 'failed' badge where the first check's heading is"
    )


# A vendor-shaped run's names: the scenario's prefix, then the cluster's own name; the last
# is longer than the widest margin holds.
PREFIX = "config-change-honoured-0072-"
LONG_NAMES = {
    "w1": PREFIX + "worker-east1",
    "w2": PREFIX + "worker-east2",
    "w3": PREFIX + "worker-west1",
    "w4": "shared-scope-of-a-vendor-with-long-names-0072-worker-west2",
}
LABELS = """<script>
(function () {
  const pictures = [...document.querySelectorAll("svg.timeline")].map((svg) => {
    const frame = svg.getBoundingClientRect();
    const plot = svg.querySelector(":scope > rect").getBoundingClientRect();
    const rows = [...svg.querySelectorAll("text.row")].map((t) => {
      const r = t.getBoundingClientRect();
      return {shown: t.textContent, full: t.parentNode.querySelector("title").textContent,
              left: r.left, right: r.right};
    });
    return {left: frame.left, plot: plot.left, rows};
  });
  document.documentElement.setAttribute("data-probe", JSON.stringify(pictures));
})();
</script>"""


def long_named_report() -> Any:
    """The default report with every cluster of its timelines renamed as in LONG_NAMES."""
    from dataclasses import replace

    from harness.recording.timeline import Timeline

    def renamed(tl: Timeline) -> Timeline:
        events = []
        for e in tl:
            data = {**e.data}
            for key in ("cluster",):
                if key in data:
                    data[key] = LONG_NAMES.get(data[key], data[key])
            if "names" in data:
                data["names"] = [LONG_NAMES.get(n, n) for n in data["names"]]
            events.append(replace(e, cluster=LONG_NAMES.get(e.cluster, e.cluster), data=data))
        return Timeline(events)

    checks = reports.checks()
    for check in checks:
        if check.timeline is not None:
            check.timeline = renamed(check.timeline)
    return reports.report(checks)


def test_a_timelines_lane_names_are_whole_or_shortened_in_the_middle(scratch: Path) -> None:
    """Long cluster names (a shared scope's, a vendor's) are drawn inside the picture, none
    cut at its edge or under the plot: whole where the margin holds them, else shortened
    in the middle so two lanes never read alike, the whole name on hover."""
    page = write_html(long_named_report(), scratch / "report.html")
    probe = scratch / "labels.html"
    head, body_end, tail = page.read_text(encoding="utf-8").rpartition("</body>")
    probe.write_text(head + LABELS + body_end + tail, encoding="utf-8")
    found = PROBE_RE.search(chromium(scratch, probe.as_uri(), "--dump-dom"))
    assert found, "the probe wrote nothing"
    pictures = json.loads(html.unescape(found[1]))
    visible = [p for p in pictures if p["rows"] and p["rows"][0]["right"] > 0]  # not folded
    assert visible, "no timeline picture drawn open"
    for picture in visible:
        shown = [r["shown"] for r in picture["rows"]]
        assert len(set(shown)) == len(shown), f"two lanes read alike: {shown}"
        for row in picture["rows"]:
            assert row["left"] >= picture["left"] - 0.5, f"{row['shown']!r} cut at the left edge"
            assert row["right"] <= picture["plot"] + 0.5, f"{row['shown']!r} runs under the plot"
            if row["shown"] != row["full"]:
                head_, _, tail_ = row["shown"].partition("…")
                assert row["full"].startswith(head_) and row["full"].endswith(tail_), row
    names = {r["full"] for p in visible for r in p["rows"]}
    assert set(LONG_NAMES.values()) - {LONG_NAMES["w4"]} <= {
        r["shown"] for p in visible for r in p["rows"]
    }, "a name the margin holds is shortened"
    assert LONG_NAMES["w4"] in names
    # the picture alone, as the page draws it, to look at: MKDC_KEEP_SCREENSHOT=/a/file.png
    keep = os.environ.get("MKDC_KEEP_SCREENSHOT")
    if keep:
        only = scratch / "picture.html"
        svg = svg_timeline(long_named_report().results()[0].timeline, reports.WL)
        only.write_text(f"<html><head><style>{CSS}</style></head><body>{svg}</body></html>")
        chromium(scratch, only.as_uri(), f"--screenshot={keep}")
