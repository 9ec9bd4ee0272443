"""Files the user names (profiles, kubeconfigs, reports), read and parsed without surprises.

A path from the command line or a profile may hold a NUL byte, a name too long for the
file system or `~nosuchuser`, or name a directory or a device; a YAML file may hold a
date like 2020-13-45, a 5000-digit integer or nesting a thousand levels deep. PyYAML and
pathlib answer those with ValueError, KeyError, RuntimeError or RecursionError from deep
inside; here each is a one-line UserError saying what is wrong, and where.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import yaml

from harness.errors import UserError, one_line, shown, shown_path


def file_problem(path: Path) -> str | None:
    """Why `path` is not a readable regular file, or None when it is one."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    except ValueError:  # an embedded NUL byte
        return "not a usable path (it holds a NUL byte)"
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    return None


def is_file(path: Path) -> bool:
    """Path.is_file, but False (not OSError) for names the OS rejects as too long."""
    return file_problem(path) is None


def is_dir(path: Path) -> bool:
    """Path.is_dir, but False (not OSError) for names the OS rejects as too long."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def read_bytes(path: Path, label: str, limit: int) -> bytes:
    """The bytes of a small input file; UserError `label: problem` when it cannot be read."""
    problem = file_problem(path)
    if problem:
        raise UserError(f"{label}: {problem}")
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise UserError(f"{label}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise UserError(f"{label}: larger than {limit // 1024} KiB, so not the right file")
    return data


def decode(data: bytes, label: str) -> str:
    """UTF-8 text; UserError naming the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{label}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None


def read_text(path: Path, label: str, limit: int) -> str:
    """The UTF-8 text of a small input file; UserError `label: problem` otherwise."""
    return decode(read_bytes(path, label, limit), label)


def expand_user(text: str) -> Path:
    """Path(text).expanduser(), with `~nosuchuser/...` a UserError instead of RuntimeError."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        user = text.split("/", 1)[0]
        raise UserError(
            f"{shown(text)}: no user {shown(user[1:])}, so {one_line(user)} cannot be expanded"
        ) from None


class SafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader whose bad scalars (2020-13-45, !!bool maybe, a 5000-digit int) are
    YAML errors at their line and column, not ValueError or KeyError without a place."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            kind = node.tag.rsplit(":", 1)[-1]
            why = str(exc) if isinstance(exc, ValueError) and "sys." not in str(exc) else ""
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{shown(node.value)} is not a valid {kind}" + (f" ({why})" if why else ""),
                node.start_mark,
            ) from None


def parse_yaml(text: str, label: str, loader: type[yaml.SafeLoader] = SafeLoader) -> Any:
    """One YAML document; UserError `label: not valid YAML: ... at line L, column C`."""
    try:
        return yaml.load(text, Loader=loader)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        raise UserError(f"{label}: not valid YAML: {yaml_problem(exc)}") from None
    except RecursionError:
        raise UserError(f"{label}: nested too deeply to be read (hundreds of levels)") from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A PyYAML error as one line: the problem and where it is."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unknown"])[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        where = f" at character {exc.position + 1}"
    return one_line(f"{problem}{where}")


def display(path: Path) -> str:
    """The path as the user would recognise it (relative to cwd when inside it), on one line."""
    try:
        return shown_path(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return shown_path(path)


def shape_problem(doc: Any, max_depth: int, max_nodes: int) -> str | None:
    """Why a parsed document is unusable whatever its fields: nested deeper than max_depth,
    or YAML aliases that make a node contain itself or expand past max_nodes values (code
    that copies or prints it would recurse for ever or explode). None when it is fine."""
    seen: dict[int, tuple[int, int]] = {}  # node id -> (values below it, its height)
    inside: set[int] = set()

    def walk(node: Any, depth: int) -> tuple[int, int]:
        if not isinstance(node, dict | list | tuple):
            return 1, 0
        if id(node) in inside:
            raise _BadShape("a YAML alias makes a node contain itself")
        total, height = seen.get(id(node)) or (0, 0)
        if not total:
            inside.add(id(node))
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            below = [walk(child, depth + 1) for child in children]
            inside.discard(id(node))
            total = 1 + sum(n for n, _ in below)
            height = 1 + max((h for _, h in below), default=0)
            seen[id(node)] = (total, height)
        if depth + height > max_depth:
            raise _BadShape(f"nested more than {max_depth} levels deep")
        if total > max_nodes:
            raise _BadShape(f"more than {max_nodes} values (YAML aliases counted at each use)")
        return total, height

    try:
        walk(doc, 0)
    except _BadShape as exc:
        return str(exc)
    return None


class _BadShape(Exception):
    """Ends the walk of shape_problem."""


# libyaml's emitter where PyYAML was built with it: the same text as the pure-Python one,
# several times faster, and a burst's artifacts are written beside the clusters the next
# scenario runs on
DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(data: Any, **options: Any) -> str:
    """``yaml.safe_dump`` of reports and artifacts, through ``DUMPER``."""
    return yaml.dump(data, Dumper=DUMPER, **options)
