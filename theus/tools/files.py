"""File tools: read, list/glob, grep (read-only); edit and write (need approval)."""

from __future__ import annotations

import difflib
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from knowledge.index.ignore import DEFAULT_EXCLUDED_DIRS, IgnoreRules, is_secret
from theus.protocol import ApprovalRequest
from theus.tools.base import Tool, ToolContext, ToolError, bool_arg, in_thread, int_arg, string_arg
from theus.tools.jail import Jail, JailError, protected_reason

log = logging.getLogger(__name__)

MAX_READ_BYTES = 2_000_000
MAX_LINE_CHARS = 2000
MAX_LIST = 500
MAX_MATCHES = 200
GREP_BUDGET_S = 10.0  # a search that backtracks without end is cut here
# What a path that is no regular file or folder is, for the line that refuses it.
SPECIAL_FILES = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def read_jailed_text(jail: Jail, raw: str) -> tuple[str, Path]:
    """A file's text read through the jail (never outside the project, size-capped): the read
    and edit tools, and the app's `@path` attachments."""
    refuse_special(raw, jail.resolve(raw))
    fd, resolved = jail.open_read(raw)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise ToolError(f"{raw}: larger than {MAX_READ_BYTES} bytes; use grep to find the part")
    if b"\x00" in data[:8192]:
        raise ToolError(f"{raw}: binary file")
    return data.decode("utf-8", errors="replace"), resolved


def refuse_special(raw: str, resolved: Path) -> None:
    """Opening a FIFO blocks until something writes to it, and a device may never end: such
    a path is refused from its stat, which never blocks. (A file swapped for one between this
    check and the open can still block that open: the tools run it on a thread of its own.)"""
    try:
        mode = os.stat(resolved).st_mode
    except OSError:
        return  # missing, or no access: the open says so
    for test, what in SPECIAL_FILES:
        if test(mode):
            raise ToolError(
                f"{raw}: {what}, not a regular file; the file tools open regular files only"
            )


def _regular(path: Path) -> bool:
    """A regular file, not followed if it is a link (a link could lead out)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = string_arg(args, "path")
    offset = int_arg(args, "offset", 1, low=1)
    limit = int_arg(args, "limit", 2000, low=1, high=5000)
    text, resolved = await in_thread(read_jailed_text, ctx.jail, path)
    ctx.files_read.add(ctx.jail.rel(resolved))
    lines = text.splitlines()
    if not lines:
        return f"{path}: (empty file)"
    chosen = lines[offset - 1 : offset - 1 + limit]
    if not chosen:
        raise ToolError(f"{path} has {len(lines)} lines; offset {offset} is past the end")
    out = [f"{n:>6}\t{line[:MAX_LINE_CHARS]}" for n, line in enumerate(chosen, start=offset)]
    end = offset + len(chosen) - 1
    if end < len(lines):
        out.append(f"... ({len(lines) - end} more lines; read with offset={end + 1})")
    return "\n".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Shell glob with `**` spanning folders; a pattern without '/' matches file names."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def walk_files(jail: Jail, start: Path) -> Iterator[Path]:
    """Files under `start` the project would index: no ignored, secret or dependency paths,
    no symlinks (they could lead out), and regular files only (a FIFO would block a read)."""
    rules = IgnoreRules(jail.root)
    for dirpath, dirnames, filenames in os.walk(start):
        base = Path(dirpath)
        rel_dir = jail.rel(base)
        keep = []
        for name in sorted(dirnames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            full = base / name
            if name in DEFAULT_EXCLUDED_DIRS or full.is_symlink() or rules.ignored(rel, True):
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            full = base / name
            if is_secret(name) or not _regular(full) or rules.ignored(rel, False):
                continue
            yield full


def _list(jail: Jail, path: str, pattern: str) -> str:
    start = jail.resolve(path)
    if not start.is_dir():
        raise ToolError(f"{path}: not a folder")
    regex = glob_regex(pattern)
    by_name = "/" not in pattern
    found: list[str] = []
    for full in walk_files(jail, start):
        rel = full.relative_to(start).as_posix()
        if regex.match(full.name if by_name else rel):
            found.append(jail.rel(full))
            if len(found) > MAX_LIST:
                break
    if not found:
        return f"no files match {pattern!r} under {path}"
    more = f"\n... (more than {MAX_LIST}; narrow the pattern)" if len(found) > MAX_LIST else ""
    return "\n".join(found[:MAX_LIST]) + more


async def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
    path = string_arg(args, "path", required=False, default=".") or "."
    pattern = string_arg(args, "pattern", required=False, default="*") or "*"
    return await in_thread(_list, ctx.jail, path, pattern)


def _grep(jail: Jail, pattern: str, path: str, glob: str, ignore_case: bool) -> str:
    import regex as regex_engine  # `re` has no time limit; this one does

    try:
        regex = regex_engine.compile(pattern, regex_engine.IGNORECASE if ignore_case else 0)
    except regex_engine.error as exc:
        raise ToolError(f"invalid regular expression: {exc}") from None
    deadline = time.monotonic() + GREP_BUDGET_S
    start = jail.resolve(path)
    name_filter = glob_regex(glob) if glob else None
    single = not start.is_dir()  # a path named by the model: why it cannot be read is said
    files = [start] if single else walk_files(jail, start)
    hits: list[str] = []
    for full in files:
        if name_filter and not name_filter.match(full.name):
            continue
        try:
            text, _ = read_jailed_text(jail, jail.rel(full))
        except (ToolError, JailError):
            if single:
                raise
            continue
        for n, line in enumerate(text.splitlines(), start=1):
            try:
                found = regex.search(line, timeout=max(0.001, deadline - time.monotonic()))
            except TimeoutError:
                raise ToolError(
                    f"the pattern {pattern!r} took longer than {GREP_BUDGET_S:g}s to search "
                    "(nested repetition such as (a+)+ backtracks without end): simplify it"
                ) from None
            if found:
                hits.append(f"{jail.rel(full)}:{n}: {line.strip()[:300]}")
                if len(hits) >= MAX_MATCHES:
                    return "\n".join(hits) + f"\n... (stopped at {MAX_MATCHES} matches)"
    return "\n".join(hits) if hits else f"no matches for {pattern!r}"


async def grep(args: dict[str, Any], ctx: ToolContext) -> str:
    pattern = string_arg(args, "pattern")
    path = string_arg(args, "path", required=False, default=".") or "."
    glob = string_arg(args, "glob", required=False)
    return await in_thread(_grep, ctx.jail, pattern, path, glob, bool_arg(args, "ignore_case"))


async def _apply(ctx: ToolContext, path: str, old: str, new: str, verb: str) -> str:
    resolved = ctx.jail.resolve(path)
    rel = ctx.jail.rel(resolved)
    protected = protected_reason(ctx.jail, resolved)
    reason = protected[0] if protected else ""
    if protected and ctx.refuse_protected and not (protected[1] and ctx.allow_config_edits):
        lift = "; --allow-config-edits allows it" if protected[1] else ""
        raise ToolError(f"refused: {rel} is {reason}; headless runs do not write there{lift}")
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{rel}",
            tofile=f"b/{rel}",
        )
    )
    summary = f"{verb} {rel}" + (f" (warning: {reason})" if reason else "")
    request = ApprovalRequest("edit", summary, diff, path=rel, protected=reason)
    if not await ctx.approve(request):
        raise ToolError(f"refused: {verb} {rel} was not approved ({ctx.refusal(request)})")
    if ctx.checkpoint is not None:
        await in_thread(_keep, ctx.checkpoint, resolved, rel)
    await in_thread(_write, ctx.jail, path, new)
    ctx.files_changed.add(rel)
    added = sum(
        1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")
    )
    removed = sum(
        1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")
    )
    return f"{verb} {rel}: +{added} -{removed} lines"


def _write(jail: Jail, path: str, content: str | bytes) -> None:
    fd, _ = jail.open_write(path)
    with os.fdopen(fd, "wb") as handle:
        handle.truncate(0)
        handle.write(content.encode("utf-8") if isinstance(content, str) else content)


def _keep(checkpoint: Callable[[str, bytes | None], None], resolved: Path, rel: str) -> None:
    """The file as it is before this change, for /undo; a checkpoint that cannot be kept
    costs the undo of this file, not the edit."""
    try:
        checkpoint(rel, _bytes_of(resolved))
    except OSError as exc:
        log.warning("no checkpoint of %s (so /undo cannot put it back): %s", rel, exc)


def put_back(jail: Jail, rel: str, data: bytes | None) -> None:
    """Restore `rel` to `data` through the jail (None: remove the file a turn created)."""
    if data is None:
        jail.resolve(rel).unlink(missing_ok=True)
    else:
        _write(jail, rel, data)


def current_bytes(jail: Jail, rel: str) -> bytes | None:
    return _bytes_of(jail.resolve(rel))


def _bytes_of(resolved: Path) -> bytes | None:
    """The file's bytes; None when there is no file there."""
    return resolved.read_bytes() if resolved.is_file() else None


async def edit_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = string_arg(args, "path")
    old = string_arg(args, "old_string")
    new = string_arg(args, "new_string")
    if not old:
        raise ToolError("old_string is empty; use write to create a file")
    if old == new:
        raise ToolError("old_string and new_string are the same")
    text, _ = await in_thread(read_jailed_text, ctx.jail, path)
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string not found in {path} (it must match exactly; read the file)")
    replace_all = bool_arg(args, "replace_all")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string appears {count} times in {path}; add surrounding lines "
            "to make it unique, or set replace_all"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return await _apply(ctx, path, text, updated, "edit")


async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path = string_arg(args, "path")
    content = string_arg(args, "content")
    resolved = ctx.jail.resolve(path)
    old = ""
    # A secret's old content is never read, not even to show a diff.
    if resolved.exists() and not ctx.jail.secret(resolved):
        old, _ = await in_thread(read_jailed_text, ctx.jail, path)
    return await _apply(ctx, path, old, content, "write")


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_PATH = {"type": "string", "description": "path relative to the project root"}

READ = Tool(
    "read",
    "Read a text file, with line numbers. Use offset/limit for long files.",
    _schema(
        {
            "path": _PATH,
            "offset": {"type": "integer", "description": "first line (1-based)"},
            "limit": {"type": "integer", "description": "number of lines"},
        },
        ["path"],
    ),
    read_file,
)
LIST = Tool(
    "list",
    "List project files matching a glob (e.g. '*.py', 'src/**/*.ts'), skipping ignored "
    "and dependency folders.",
    _schema({"pattern": {"type": "string"}, "path": {**_PATH, "description": "folder"}}, []),
    list_files,
)
GREP = Tool(
    "grep",
    "Search file contents with a regular expression; returns path:line: text.",
    _schema(
        {
            "pattern": {"type": "string"},
            "path": _PATH,
            "glob": {"type": "string", "description": "file name filter, e.g. '*.py'"},
            "ignore_case": {"type": "boolean"},
        },
        ["pattern"],
    ),
    grep,
)
EDIT = Tool(
    "edit",
    "Replace an exact piece of a file (old_string must match exactly and be unique "
    "unless replace_all). Asks for approval.",
    _schema(
        {
            "path": _PATH,
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        ["path", "old_string", "new_string"],
    ),
    edit_file,
)
WRITE = Tool(
    "write",
    "Create or overwrite a file with the given content. Asks for approval.",
    _schema({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
    write_file,
)
