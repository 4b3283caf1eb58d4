"""Claude Code's tool rules on Theus's command line: `--allowedTools`, `--disallowedTools` and
`--permission-mode`, so a script written for `claude -p` runs with the binary's name changed.

Claude Code's names map onto Theus's tools: Bash → shell; Edit, MultiEdit, NotebookEdit →
edit; Write → write; Read → read; Grep → grep; Glob and LS → list; Task → task;
`mcp__server__tool` (or `mcp__server`, `mcp__server__*`) → the MCP tool `server__tool`.
Theus's own names work too. Claude Code tools Theus does not have (WebFetch, TodoWrite, …)
are accepted and change nothing; any other name is one clear error.

- allowed, bare (`Bash`, `Edit`): every request of that kind is approved, as `--allow-shell`
  or `--allow-edits` would (the sandbox and the protected files still hold).
- allowed with a specifier: `Bash(git diff:*)` approves commands whose every simple command
  starts with `git diff` (`Bash(npm test)`: exactly that); `Edit(src/**)` approves edits
  and writes of paths the gitignore-style pattern matches, relative to the project.
- disallowed, bare: the tool is taken from the model (a subagent's set follows its parent's).
- disallowed with a specifier: matching requests are refused, even where a flag or an allow
  rule would approve them; a command no rule can read (`$( )`, a redirection to a file) is
  refused while any command is disallowed.
- `--permission-mode`: `default` asks (headless: refuses) what no flag or rule allows;
  `acceptEdits` approves edits; `bypassPermissions` edits and commands; `plan` takes the
  tools that change anything away (edit, write, shell) and refuses every approval.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from theus.protocol import ApprovalRequest
from theus.shell_parts import Unchecked, simple_commands

if TYPE_CHECKING:
    import pathspec

MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
CLAUDE_TOOLS = {
    "Bash": "shell",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Write": "write",
    "Read": "read",
    "Grep": "grep",
    "Glob": "list",
    "LS": "list",
    "Task": "task",
}
# Claude Code's tools with no Theus counterpart: a rule about one has nothing to act on.
ABSENT = frozenset(
    {
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "TodoRead",
        "NotebookRead",
        "ExitPlanMode",
        "BashOutput",
        "KillShell",
        "KillBash",
        "SlashCommand",
        "Skill",
        "AskUserQuestion",
        "Agent",
    }
)


@dataclass(frozen=True)
class _Declared:
    """The agent's tools, each rule's meaning from its declared effect
    (`theus.tools.base.Effect`): read when a rule or a mode first needs them, so that a run
    without any imports the tools where it builds the agent, not at start."""

    names: tuple[str, ...]
    kind_of: dict[str, str]  # the approval each tool asks for
    changing: tuple[str, ...]  # what plan mode takes away


@functools.cache
def _declared() -> _Declared:
    from theus.tools.registry import DECLARED

    agent = [t for t in DECLARED if t.agent]
    return _Declared(
        tuple(t.name for t in agent),
        {t.name: t.effect.approval for t in agent if t.effect.approval},
        tuple(t.name for t in agent if t.effect.changes),
    )


_RULE = re.compile(r"(?P<name>[A-Za-z_][\w-]*)(?:\((?P<spec>.*)\))?", re.DOTALL)
MCP_PREFIX = "mcp__"


@dataclass(frozen=True)
class _Pattern:
    """What one rule with a specifier covers: a command prefix (or exact command), or paths."""

    kind: str  # "shell" | "edit"
    words: tuple[str, ...] = ()
    exact: bool = False
    paths: pathspec.GitIgnoreSpec | None = None

    def covers_command(self, part: tuple[str, ...]) -> bool:
        return part == self.words if self.exact else part[: len(self.words)] == self.words

    def covers_path(self, path: str) -> bool:
        return self.paths is not None and self.paths.match_file(path)


@dataclass
class ToolRules:
    """The run's rules, from the three flags (`parse`)."""

    mode: str = "default"
    removed: set[str] = field(default_factory=set)  # tools the model never sees
    kinds: set[str] = field(default_factory=set)  # "edit", "shell": approved whole
    allowed: list[_Pattern] = field(default_factory=list)
    denied: list[_Pattern] = field(default_factory=list)
    mcp_allowed: list[str] = field(default_factory=list)  # `server__tool`, `server__*`
    mcp_denied: list[str] = field(default_factory=list)

    @classmethod
    def parse(
        cls, allowed: list[str] | None, disallowed: list[str] | None, mode: str | None
    ) -> ToolRules:
        """Raises ValueError (one line) for an unknown tool, mode or specifier."""
        rules = cls(mode=mode or "default")
        if rules.mode not in MODES:
            raise ValueError(f"--permission-mode takes one of {', '.join(MODES)}, not {mode!r}")
        if rules.mode == "acceptEdits":
            rules.kinds.add("edit")
        elif rules.mode == "bypassPermissions":
            rules.kinds |= {"edit", "shell"}
        elif rules.mode == "plan":
            rules.removed |= set(_declared().changing)
        for text in split_rules(allowed):
            rules._add(text, allow=True)
        for text in split_rules(disallowed):
            rules._add(text, allow=False)
        return rules

    def _add(self, text: str, *, allow: bool) -> None:
        flag = "--allowedTools" if allow else "--disallowedTools"
        match = _RULE.fullmatch(text)
        if match is None:
            raise ValueError(f"{flag}: {text!r} is not a rule (Tool or Tool(specifier))")
        name, spec = match["name"], match["spec"]
        if name.startswith(MCP_PREFIX):
            server, _, tool = name[len(MCP_PREFIX) :].partition("__")
            if not server or spec is not None:
                raise ValueError(
                    f"{flag}: {text!r}: an MCP rule is mcp__SERVER or mcp__SERVER__TOOL"
                )
            (self.mcp_allowed if allow else self.mcp_denied).append(f"{server}__{tool or '*'}")
            return
        if name in ABSENT:
            return
        declared = _declared()
        tool = CLAUDE_TOOLS.get(name, name if name in declared.names else "")
        if not tool:
            raise ValueError(
                f"{flag}: unknown tool {name!r} (Bash, Edit, Write, Read, Grep, "
                "Glob, Task, mcp__SERVER__TOOL, or Theus's own names)"
            )
        if spec is None:
            if allow and tool in declared.kind_of:
                self.kinds.add(declared.kind_of[tool])
            elif not allow:
                self.removed.add(tool)
            return  # reading tools ask nothing: allowing them changes nothing
        if tool not in declared.kind_of:
            if allow:
                return
            raise ValueError(
                f"{flag}: {text!r}: {name} asks no approval, so only the whole "
                f"tool can be disallowed ({name})"
            )
        pattern = _pattern(declared.kind_of[tool], spec, flag)
        (self.allowed if allow else self.denied).append(pattern)

    @property
    def shell_denied(self) -> bool:
        return "shell" in self.removed or any(p.kind == "shell" for p in self.denied)

    def verdict(self, request: ApprovalRequest) -> bool | None:
        """False: refused by a rule or the mode; True: approved by one; None: the rules say
        nothing and the run's flags decide."""
        if self.mode == "plan":
            return False
        if request.kind == "mcp":
            tool = request.tool or ""
            if any(fnmatchcase(tool, name) for name in self.mcp_denied):
                return False
            return True if any(fnmatchcase(tool, n) for n in self.mcp_allowed) else None
        if request.kind == "shell":
            try:
                parts = simple_commands(request.detail)
            except Unchecked:
                return False if self.shell_denied else None
            if any(
                p.kind == "shell" and p.covers_command(part) for p in self.denied for part in parts
            ):
                return False
            if request.kind in self.kinds:
                return True
            shell_rules = [p for p in self.allowed if p.kind == "shell"]
            covered = parts and all(
                any(p.covers_command(part) for p in shell_rules) for part in parts
            )
            return True if covered else None
        path = request.path or ""
        if path and any(p.kind == "edit" and p.covers_path(path) for p in self.denied):
            return False
        if request.kind in self.kinds:
            return True
        return (
            True
            if path and any(p.kind == "edit" and p.covers_path(path) for p in self.allowed)
            else None
        )


def split_rules(values: list[str] | None) -> list[str]:
    """Rules as Claude Code reads them: each value split at commas and blanks outside
    parentheses (`"Bash(git log:*),Read"` is two; `Bash(git diff HEAD:*)` stays one)."""
    found: list[str] = []
    for value in values or ():
        depth, start = 0, 0
        for i, c in enumerate(value + ","):
            depth += (c == "(") - (c == ")")
            if depth <= 0 and c in ", \t":
                if value[start:i].strip():
                    found.append(value[start:i].strip())
                start = i + 1
    return found


def _pattern(kind: str, spec: str, flag: str) -> _Pattern:
    spec = spec.strip()
    if kind == "shell":
        prefix = spec.endswith(":*") or spec.endswith(" *")
        command = spec[:-2] if prefix else spec
        try:
            parts = simple_commands(command)
        except Unchecked as exc:
            raise ValueError(f"{flag}: Bash({spec}) cannot be checked: {exc}") from None
        if len(parts) != 1:
            raise ValueError(f"{flag}: Bash({spec}) names one command (Bash(git diff:*))")
        return _Pattern("shell", words=parts[0], exact=not prefix)
    if not spec or spec.startswith(("//", "~")):
        raise ValueError(
            f"{flag}: Edit({spec}) names paths inside the project, as a "
            "gitignore pattern (Edit(src/**))"
        )
    import pathspec  # here: only an Edit(...) rule needs it, and `theus -p` imports this module

    return _Pattern(
        "edit",
        paths=pathspec.GitIgnoreSpec.from_lines([spec[2:] if spec.startswith("./") else spec]),
    )
