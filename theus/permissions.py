"""Standing approvals: "always allow this command/tool", for this session or in this project.

A rule names a tool ("shell" or "edit") and, for the shell, the exact command; a rule
without a command allows every call of its tool (file edits and writes), except an edit of a
file that runs code by itself (the request's `protected`: CI, hooks, Makefile, agent
configuration), which is asked each time. Session rules live
in memory; project rules in `permissions.json` in the project's data folder (never in the
repository, so a cloned project cannot grant itself anything), read on each check so two
apps on one project agree. Listed and revoked with `/permissions` in the app.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from knowledge import atomic
from knowledge.paths import ProjectPaths
from theus.protocol import ApprovalRequest

log = logging.getLogger(__name__)

Scope = Literal["session", "project"]


@dataclass(frozen=True, slots=True)
class Rule:
    tool: str  # "shell" | "edit" | "mcp"
    command: str = ""  # the exact shell command (the `server__tool` for mcp); "" allows every
    # call of the tool

    @classmethod
    def for_request(cls, request: ApprovalRequest) -> Rule:
        """The rule "always allow this" means: the command for the shell, the tool for edits
        (one rule per diff would never match again)."""
        if request.kind == "shell":
            return cls("shell", request.detail)
        if request.kind == "mcp":  # one MCP tool, whatever its arguments
            return cls("mcp", request.tool or request.summary)
        return cls("edit")

    def allows(self, request: ApprovalRequest) -> bool:
        if request.kind != self.tool or request.protected:
            return False
        if self.tool == "mcp":
            return self.command == (request.tool or request.summary)
        return not self.command or self.command == request.detail

    def describe(self) -> str:
        if self.tool == "shell":
            return f"run `{self.command}`" if self.command else "run any command"
        if self.tool == "mcp":
            return f"call the MCP tool {self.command}"
        return "edit and write files (not ones that run code)"


class Permissions:
    def __init__(self, root: Path) -> None:
        home = ProjectPaths.for_root(root).home
        self.path = home / "permissions.json"
        self._lock = home / "permissions.lock"
        self.session: list[Rule] = []

    def allowing(self, request: ApprovalRequest) -> tuple[Scope, Rule] | None:
        """The standing rule that approves `request`, if any."""
        for scope, rule in self.listed():
            if rule.allows(request):
                return scope, rule
        return None

    def allow(self, rule: Rule, scope: Scope) -> None:
        if scope == "session":
            if rule not in self.session:
                self.session.append(rule)
            return
        with atomic.locked(self._lock):
            rules = self._project_rules()
            if rule not in rules:
                self._save([*rules, rule])

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
                self._save([r for r in self._project_rules() if r != rule])
        return scope, rule

    def forget_session(self) -> None:
        self.session.clear()

    def _project_rules(self) -> list[Rule]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s: %s", self.path, exc)
            return []
        rows = raw.get("allow") if isinstance(raw, dict) else None
        return [Rule(str(row["tool"]), str(row.get("command", "")))
                for row in rows or () if isinstance(row, dict) and row.get("tool") in
                ("shell", "edit", "mcp")]

    def _save(self, rules: list[Rule]) -> None:
        data = {"allow": [{"tool": r.tool, "command": r.command} if r.command else
                          {"tool": r.tool} for r in rules]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.path, json.dumps(data, indent=2) + "\n", mode=0o600)
