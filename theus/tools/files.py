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
from typing import Annotated

from knowledge.index.ignore import DEFAULT_EXCLUDED_DIRS, IgnoreRules, is_secret
from theus.protocol import ApprovalRequest
from theus.tools.base import Bounds, Effect, ToolContext, ToolError, in_thread, tool
from theus.tools.jail import Jail, JailError, protected_reason

log = logging.getLogger(__name__)

ProjectPath = Annotated[str, "path relative to the project root"]

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


@tool(Effect.READ, name="read")
async def read_file(
    ctx: ToolContext,
    path: ProjectPath,
    offset: Annotated[int, "first line (1-based)", Bounds(low=1)] = 1,
    limit: Annotated[int, "number of lines", Bounds(1, 5000)] = 2000,
) -> str:
    """Read a text file, with line numbers. Use offset/limit for long files."""
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


@tool(Effect.READ, name="list")
async def list_files(
    ctx: ToolContext, pattern: str = "*", path: Annotated[str, "folder"] = "."
) -> str:
    """List project files matching a glob (e.g. '*.py', 'src/**/*.ts'), skipping ignored
    and dependency folders."""
    return await in_thread(_list, ctx.jail, path or ".", pattern or "*")


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


@tool(Effect.READ)
async def grep(
    ctx: ToolContext,
    pattern: str,
    path: ProjectPath = ".",
    glob: Annotated[str, "file name filter, e.g. '*.py'"] = "",
    ignore_case: bool = False,
) -> str:
    """Search file contents with a regular expression; returns path:line: text."""
    return await in_thread(_grep, ctx.jail, pattern, path or ".", glob, ignore_case)


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


@tool(Effect.EDIT, name="edit")
async def edit_file(
    ctx: ToolContext,
    path: ProjectPath,
    old_string: str,
    new_string: str,
    replace_all: bool = False,
) -> str:
    """Replace an exact piece of a file (old_string must match exactly and be unique
    unless replace_all). Asks for approval."""
    old, new = old_string, new_string
    if not old:
        raise ToolError("old_string is empty; use write to create a file")
    if old == new:
        raise ToolError("old_string and new_string are the same")
    text, _ = await in_thread(read_jailed_text, ctx.jail, path)
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string not found in {path} (it must match exactly; read the file)")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string appears {count} times in {path}; add surrounding lines "
            "to make it unique, or set replace_all"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return await _apply(ctx, path, text, updated, "edit")


@tool(Effect.EDIT, name="write")
async def write_file(ctx: ToolContext, path: ProjectPath, content: str) -> str:
    """Create or overwrite a file with the given content. Asks for approval."""
    resolved = ctx.jail.resolve(path)
    old = ""
    # A secret's old content is never read, not even to show a diff.
    if resolved.exists() and not ctx.jail.secret(resolved):
        old, _ = await in_thread(read_jailed_text, ctx.jail, path)
    return await _apply(ctx, path, old, content, "write")
