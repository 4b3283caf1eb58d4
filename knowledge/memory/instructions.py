"""Project instructions: the conventions people keep for coding agents, read as Codex, Claude
Code and Cursor read them, so switching to Theus keeps them.

Files, in the order they are given to the model (later ones are nearer the work and win a
conflict): the user's own `AGENTS.md` in the Theus config folder, then from the repository's
root down to the project's folder, in each folder `AGENTS.md` (the open format), `CLAUDE.md`
and `THEUS.md`. A file whose text another already gave (CLAUDE.md linked to AGENTS.md) is
given once. Redacted, and capped as Codex caps them (32 KiB in all: past it a file is cut,
with a line that says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from knowledge.core.paths import config_home
from knowledge.core.redact import redact

NAMES = ("AGENTS.md", "CLAUDE.md", "THEUS.md")
USER_FILE = "AGENTS.md"  # in the config folder: the user's conventions for every project
CAP_BYTES = 32 * 1024


@dataclass(frozen=True, slots=True)
class Instructions:
    files: tuple[str, ...] = ()  # as shown: relative to the project, or absolute outside it
    text: str = ""  # what the system prompt carries ("" when there are none)
    cut: tuple[str, ...] = field(default=())  # files cut or left out by the cap


def read_instructions(root: Path) -> Instructions:
    """The instructions for the project at `root`; unreadable files are skipped."""
    root = root.resolve()
    found: list[Path] = [config_home() / USER_FILE]
    for folder in _folders(root):
        found += [folder / name for name in NAMES]
    shown: list[str] = []
    parts: list[str] = []
    cut: list[str] = []
    seen: set[str] = set()
    room = CAP_BYTES
    for path in found:
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:  # missing (the usual case), a folder, unreadable
            continue
        if not text or text in seen:
            continue
        seen.add(text)
        name = _shown(path, root)
        if room <= 0:
            cut.append(name)
            continue
        data = text.encode()
        if len(data) > room:
            text = data[:room].decode(errors="ignore") + (
                f"\n[cut: {len(data) - room} more bytes in {name}]"
            )
            cut.append(name)
        room -= len(data)
        shown.append(name)
        parts.append(f"## {name}\n\n{redact(text)}")
    return Instructions(tuple(shown), "\n\n".join(parts), tuple(cut))


def _folders(root: Path) -> list[Path]:
    """The repository's root down to `root` (only `root` outside a repository)."""
    chain = [root]
    for parent in root.parents:
        if (chain[-1] / ".git").exists():
            break
        chain.append(parent)
    else:
        if not (chain[-1] / ".git").exists():
            chain = [root]
    return list(reversed(chain))


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
