"""The README stays short, and every relative link in the project's Markdown pages leads
somewhere: to a file that exists and, where the link names a section, to a heading of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
# [text](target) and ![alt](target); the target may carry a "title" after a space
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^)]*)?\)")
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
EXTERNAL = ("http://", "https://", "mailto:")


def pages(root: Path = ROOT) -> list[Path]:
    """The Markdown pages a reader of the project follows links through."""
    found = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]
    return [p for p in found if p.is_file()]


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    """Every link target in the Markdown ``text``, outside code."""
    return LINK.findall(prose(text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """One line per relative link of ``page`` that leads nowhere: a missing file, or a
    ``#section`` its target has no heading for. External links are not followed."""
    problems = []
    for target in links(page.read_text(encoding="utf-8")):
        if not target or target.startswith(EXTERNAL):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(root)}: ({target})"
        if not dest.exists():
            problems.append(f"{where}: no such file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: no heading with the anchor #{anchor} in {dest.name}")
    return problems


def test_the_readme_is_read_in_five_minutes():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move detail to docs/"
    )


def test_the_pages_checked_are_the_project_s_own():
    names = {p.relative_to(ROOT).as_posix() for p in pages()}
    assert {"README.md", "CONTRIBUTING.md", "docs/benchmarks.md"} <= names


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_section_that_exist(page: Path):
    assert broken_links(page) == []


def test_links_are_found_outside_code_and_broken_ones_are_reported(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# There\n\n## A section, `with code`\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# Title\n\n"
        "[ok](docs/there.md) [section](docs/there.md#a-section-with-code) [self](#title)\n"
        '![picture](docs/there.md "a title") [web](https://example.com/x) [m](mailto:a@b)\n'
        "[gone](docs/missing.md) [no section](docs/there.md#nowhere) [no top](#nothing)\n"
        "`[code span](docs/not-a-link.md)`\n\n"
        "```\n[in a fence](docs/not-a-link-either.md)\n```\n"
    )
    assert links(page.read_text())[:3] == [
        "docs/there.md",
        "docs/there.md#a-section-with-code",
        "#title",
    ]
    problems = broken_links(page, root=tmp_path)
    assert len(problems) == 3, problems
    assert "(docs/missing.md): no such file" in problems[0]
    assert "no heading with the anchor #nowhere in there.md" in problems[1]
    assert "(#nothing): no heading with the anchor #nothing in README.md" in problems[2]
    assert not any("not-a-link" in p for p in problems)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("How `make test` is scheduled, and the runs that showed it",
         "how-make-test-is-scheduled-and-the-runs-that-showed-it"),
        ("Where a bring-up's time goes", "where-a-bring-ups-time-goes"),
        ("Results: passed, failed, undecided", "results-passed-failed-undecided"),
        ("local (the default; no Docker)", "local-the-default-no-docker"),
    ],
)  # fmt: skip
def test_anchors_are_made_as_github_makes_them(heading: str, anchor: str):
    assert slug(heading) == anchor
