"""Standing approvals: "always allow this", for this session or in this project.

A rule names its tool and what it covers, and nothing wider:

- shell: a command prefix, matched word by word (`make test` covers `make test -k cart`, not
  `make tests`). A command is split into the simple commands it runs (`theus.shell_parts`):
  `make test && rm -rf x` needs a rule for each part, and one with `$( )`, backticks, a
  subshell or a redirection to a file is asked each time.
- edit: a file, or a folder when it ends with `/`, relative to the project.
- mcp: one tool of one server, the server known by its entry (`ServerConfig.identity`: what it
  runs or reaches), not by its name alone.

A rule without its command, path or server is refused when the file is read, with one
warning. No rule covers an edit of a file that runs code by itself (the request's `protected`)
or a command that would run outside a sandbox. Session rules live in memory; project rules in
`permissions.json` in the project's data folder (never in the repository, which cannot grant
itself anything; the tools cannot write the data folder), tied to the repository found there
(`theus.grants`), read on each check so two apps on one project agree. Listed and revoked
with `/permissions` in the app.
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from knowledge.core import atomic
from knowledge.core.paths import ProjectPaths
from theus import grants
from theus.protocol import ApprovalRequest
from theus.shell_parts import Unchecked, simple_commands

log = logging.getLogger(__name__)

Scope = Literal["session", "project"]
Tool = Literal["shell", "edit", "mcp"]
TOOLS: tuple[Tool, ...] = ("shell", "edit", "mcp")


@dataclass(frozen=True, slots=True)
class Rule:
    """Raises ValueError (one line) when it does not name what it covers."""

    tool: Tool
    command: str = ""  # shell: the command prefix
    path: str = ""  # edit: a file, or a folder ending with "/"
    name: str = ""  # mcp: the tool as the model calls it, `server__tool`
    server: str = ""  # mcp: the identity of the server's entry

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise ValueError(problem)

    def _problem(self) -> str:
        if self.tool == "shell":
            try:
                parts = simple_commands(self.command)
            except Unchecked as exc:
                return f"the shell rule {self.command!r} cannot be checked: {exc}"
            if len(parts) != 1:
                return f"a shell rule names one command prefix (`make test`), not {self.command!r}"
            return ""
        if self.tool == "edit":
            clean = posixpath.normpath(self.path) if self.path else ""
            if clean in ("", ".", "..") or clean.startswith(("/", "../")):
                return (
                    "an edit rule names a file or a folder (ending with /) inside the "
                    f"project, not {self.path!r}"
                )
            return ""
        if self.tool == "mcp":
            return (
                ""
                if self.name and self.server
                else ("an MCP rule names the tool and its server's identity")
            )
        return f"unknown tool {self.tool!r} (shell, edit or mcp)"

    @property
    def words(self) -> tuple[str, ...]:
        return simple_commands(self.command)[0] if self.tool == "shell" else ()

    def covers(self, request: ApprovalRequest, part: tuple[str, ...] = ()) -> bool:
        """Whether the rule covers `request` (a shell request: its simple command `part`)."""
        if request.kind != self.tool:
            return False
        if self.tool == "shell":
            return part[: len(self.words)] == self.words
        if self.tool == "edit":
            target = request.path or ""
            return target == self.path or (self.path.endswith("/") and target.startswith(self.path))
        return (self.name, self.server) == (request.tool, request.server)

    def describe(self) -> str:
        if self.tool == "shell":
            return f"run commands that start with `{self.command}`"
        if self.tool == "mcp":
            return f"call the MCP tool {self.name} (while its server's entry stays the same)"
        if self.path.endswith("/"):
            return f"edit and write files in {self.path} (not ones that run code)"
        return f"edit and write {self.path}"

    def as_json(self) -> dict[str, str]:
        return {
            key: value
            for key, value in (
                ("tool", self.tool),
                ("command", self.command),
                ("path", self.path),
                ("name", self.name),
                ("server", self.server),
            )
            if value
        }


def asked_each_time(request: ApprovalRequest) -> str:
    """Why no standing rule can cover `request` ("" when one can)."""
    if request.protected:
        return f"no standing approval covers it ({request.protected})"
    if request.kind == "shell":
        try:
            if not simple_commands(request.detail):
                return "the command is empty"
        except Unchecked as exc:
            return f"no standing approval covers this command: {exc}"
    if request.kind == "edit" and not request.path:
        return "no standing approval covers an edit without a path"
    if request.kind == "mcp" and not (request.tool and request.server):
        return "no standing approval covers a call of an unknown server"
    return ""


def rules_for(request: ApprovalRequest) -> list[Rule]:
    """The rules "always allow this" adds: one per simple command of a shell command (each
    the command as written, so later arguments are covered, nothing before or instead), the
    file for an edit, the tool of this server for MCP; [] when `asked_each_time`."""
    if asked_each_time(request):
        return []
    if request.kind == "shell":
        parts = dict.fromkeys(simple_commands(request.detail))
        return [Rule("shell", command=" ".join(part)) for part in parts]
    if request.kind == "edit":
        return [Rule("edit", path=request.path or "")]
    return [Rule("mcp", name=request.tool or "", server=request.server)]


class Permissions:
    def __init__(self, root: Path) -> None:
        self.root = root
        home = ProjectPaths.for_root(root).home
        self.path = home / "permissions.json"
        self._lock = home / "permissions.lock"
        self.session: list[Rule] = []
        self.warnings: list[str] = []  # about the project file, each logged once

    def allowing(self, request: ApprovalRequest) -> list[tuple[Scope, Rule]]:
        """The standing rules that together approve `request` (a shell command needs one for
        each of its simple commands); [] when they do not."""
        if asked_each_time(request):
            return []
        listed = self.listed()
        parts = simple_commands(request.detail) if request.kind == "shell" else [()]
        found: list[tuple[Scope, Rule]] = []
        for part in parts:
            match = next((pair for pair in listed if pair[1].covers(request, part)), None)
            if match is None:
                return []
            if match not in found:
                found.append(match)
        return found

    def allow(self, rules: list[Rule], scope: Scope) -> None:
        if scope == "session":
            self.session += [r for r in rules if r not in self.session]
            return
        with atomic.locked(self._lock):
            kept = self._project_rules()
            grants.write(
                self.path,
                self.root,
                {"allow": [r.as_json() for r in kept + [r for r in rules if r not in kept]]},
            )

    def listed(self) -> list[tuple[Scope, Rule]]:
        """Session rules first, then the project's; `/permissions` numbers them in this order."""
        found: list[tuple[Scope, Rule]] = [("session", r) for r in self.session]
        return found + [("project", r) for r in self._project_rules()]

    def revoke(self, number: int) -> tuple[Scope, Rule]:
        """Drop the rule `listed()` shows as `number` (1-based); IndexError when none is."""
        listed = self.listed()
        if not 1 <= number <= len(listed):
            raise IndexError(number)
        scope, rule = listed[number - 1]
        if scope == "session":
            self.session.remove(rule)
        else:
            with atomic.locked(self._lock):
                grants.write(
                    self.path,
                    self.root,
                    {"allow": [r.as_json() for r in self._project_rules() if r != rule]},
                )
        return scope, rule

    def forget_session(self) -> None:
        self.session.clear()

    def _project_rules(self) -> list[Rule]:
        raw, warning = grants.read(self.path, self.root)
        problems = [warning] if warning else []
        rules: list[Rule] = []
        rows = raw.get("allow", [])
        for number, row in enumerate(rows if isinstance(rows, list) else [rows], 1):
            try:
                rules.append(_rule(row))
            except ValueError as exc:
                problems.append(f"{self.path}: rule {number} is refused: {exc}")
        for problem in problems:
            if problem not in self.warnings:
                self.warnings.append(problem)
                log.warning("%s", problem)
        return rules


def _rule(row: Any) -> Rule:
    if not isinstance(row, dict) or row.get("tool") not in TOOLS:
        raise ValueError(f'expected {{"tool": "shell"|"edit"|"mcp", ...}}, not {row!r}')
    fields = {k: row[k] for k in ("command", "path", "name", "server") if k in row}
    if not all(isinstance(v, str) for v in fields.values()):
        raise ValueError(f"expected strings in {row!r}")
    return Rule(row["tool"], **fields)
