"""Files that run code, or load tools, on an action a person takes without reading them.

Opening the folder in an editor or another agent, `cd` into it, a git operation, CI on push, a
build: whoever writes one of these files runs code later, outside any sandbox and any approval.
So the file tools refuse them in headless runs and the shell's sandbox mounts them read-only,
unless the user passes `--allow-config-edits`.

A rule's pattern matches paths relative to the project root, at any depth:
- `name` a file or folder with that name (a folder protects everything below it);
- `a/b` those names in a row (`.github/workflows` protects every workflow);
- `*.ext` any file whose name ends so.
Manifests a coding task edits every day (`package.json`, `pyproject.toml`, `Cargo.toml`,
`build.rs`, Dockerfiles) are not here: their code runs when a person builds on purpose, and
refusing them would refuse the work itself. So are a virtual environment's `.pth` files, which
installing a package writes.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: str
    reason: str
    # git's own data: the file tools never write it, git commands in the shell must
    # (objects, index, refs); its hooks and config are rules of their own.
    shell_writable: bool = False


_VCS = "version control runs it (hooks, filters, config)"
_EDITOR = "an editor runs it when the folder is opened (tasks, settings, exrc)"
_AGENT = "another coding agent loads it as instructions, tools or MCP servers"
_CI = "CI runs it on push"
_ENV = "a dev-environment tool runs it on open or cd"
_SHELL = "a shell runs it at start-up"
_BUILD = "a build, test or package tool runs it by itself"

RULES: tuple[Rule, ...] = (
    # Version control
    Rule(".git", "git's own data", shell_writable=True),
    Rule(".git/hooks", _VCS),
    Rule(".git/config", _VCS),
    Rule(".git/info", _VCS),
    Rule(".gitattributes", _VCS),
    Rule(".gitmodules", _VCS),
    Rule(".githooks", _VCS),
    Rule(".husky", _VCS),
    Rule(".pre-commit-config.yaml", _VCS),
    Rule("lefthook.yml", _VCS),
    Rule(".lefthook.yml", _VCS),
    Rule("lefthook-local.yml", _VCS),
    Rule(".overcommit.yml", _VCS),
    Rule(".hg", _VCS),
    # Editors
    Rule(".vscode", _EDITOR),
    Rule(".idea", _EDITOR),
    Rule(".zed", _EDITOR),
    Rule(".fleet", _EDITOR),
    Rule("*.code-workspace", _EDITOR),
    Rule(".exrc", _EDITOR),
    Rule(".nvimrc", _EDITOR),
    Rule(".nvim.lua", _EDITOR),
    Rule(".lvimrc", _EDITOR),
    # Coding agents
    Rule(".theus", _AGENT),
    Rule("THEUS.md", _AGENT),
    Rule(".claude", _AGENT),
    Rule("CLAUDE.md", _AGENT),
    Rule("CLAUDE.local.md", _AGENT),
    Rule(".mcp.json", _AGENT),
    Rule("AGENTS.md", _AGENT),
    Rule("AGENT.md", _AGENT),
    Rule(".codex", _AGENT),
    Rule(".cursor", _AGENT),
    Rule(".cursorrules", _AGENT),
    Rule(".windsurf", _AGENT),
    Rule(".windsurfrules", _AGENT),
    Rule(".gemini", _AGENT),
    Rule("GEMINI.md", _AGENT),
    Rule(".roo", _AGENT),
    Rule(".roomodes", _AGENT),
    Rule(".clinerules", _AGENT),
    Rule("opencode.json", _AGENT),
    Rule("opencode.jsonc", _AGENT),
    Rule(".opencode", _AGENT),
    Rule(".kiro", _AGENT),
    Rule(".amazonq", _AGENT),
    Rule(".continue", _AGENT),
    Rule(".aider.conf.yml", _AGENT),
    Rule(".aider.model.settings.yml", _AGENT),
    Rule(".goosehints", _AGENT),
    Rule(".junie", _AGENT),
    Rule(".github/copilot-instructions.md", _AGENT),
    Rule(".github/instructions", _AGENT),
    Rule(".github/prompts", _AGENT),
    Rule(".github/chatmodes", _AGENT),
    # CI
    Rule(".github/workflows", _CI),
    Rule(".github/actions", _CI),
    Rule(".gitlab-ci.yml", _CI),
    Rule(".gitlab", _CI),
    Rule(".circleci", _CI),
    Rule("Jenkinsfile", _CI),
    Rule("azure-pipelines.yml", _CI),
    Rule("azure-pipelines.yaml", _CI),
    Rule(".azure-pipelines", _CI),
    Rule(".travis.yml", _CI),
    Rule(".buildkite", _CI),
    Rule("bitbucket-pipelines.yml", _CI),
    Rule(".drone.yml", _CI),
    Rule(".woodpecker.yml", _CI),
    Rule(".woodpecker", _CI),
    Rule("appveyor.yml", _CI),
    Rule(".appveyor.yml", _CI),
    Rule(".cirrus.yml", _CI),
    Rule("cloudbuild.yaml", _CI),
    Rule("codemagic.yaml", _CI),
    Rule(".semaphore", _CI),
    # Dev environments
    Rule(".devcontainer", _ENV),
    Rule(".devcontainer.json", _ENV),
    Rule(".gitpod.yml", _ENV),
    Rule(".envrc", _ENV),
    Rule(".direnv", _ENV),
    Rule("mise.toml", _ENV),
    Rule(".mise.toml", _ENV),
    Rule(".mise", _ENV),
    Rule("devbox.json", _ENV),
    # Shell start-up
    Rule(".bashrc", _SHELL),
    Rule(".bash_profile", _SHELL),
    Rule(".bash_logout", _SHELL),
    Rule(".zshrc", _SHELL),
    Rule(".zshenv", _SHELL),
    Rule(".zprofile", _SHELL),
    Rule(".profile", _SHELL),
    # Build, test and package tools
    Rule("Makefile", _BUILD),
    Rule("GNUmakefile", _BUILD),
    Rule("makefile", _BUILD),
    Rule("justfile", _BUILD),
    Rule("Justfile", _BUILD),
    Rule(".justfile", _BUILD),
    Rule("setup.py", _BUILD),
    Rule("conftest.py", _BUILD),
    Rule("noxfile.py", _BUILD),
    Rule("sitecustomize.py", _BUILD),
    Rule("usercustomize.py", _BUILD),
    Rule(".cargo/config.toml", _BUILD),
    Rule(".cargo/config", _BUILD),
    Rule("rust-toolchain.toml", _BUILD),
    Rule("rust-toolchain", _BUILD),
    Rule(".npmrc", _BUILD),
    Rule(".yarnrc", _BUILD),
    Rule(".yarnrc.yml", _BUILD),
    Rule(".pnpmfile.cjs", _BUILD),
    Rule("bunfig.toml", _BUILD),
    Rule("gradlew", _BUILD),
    Rule("gradle.properties", _BUILD),
    Rule("gradle/wrapper", _BUILD),
    Rule("mvnw", _BUILD),
    Rule(".mvn", _BUILD),
)

_BY_LAST: dict[str, list[tuple[tuple[str, ...], Rule]]] = {}
_BY_SUFFIX: list[tuple[str, Rule]] = []
for _rule in RULES:
    if _rule.pattern.startswith("*"):
        _BY_SUFFIX.append((_rule.pattern, _rule))
    else:
        _parts = tuple(_rule.pattern.split("/"))
        _BY_LAST.setdefault(_parts[-1], []).append((_parts, _rule))


def rule_at(parts: tuple[str, ...], index: int) -> Rule | None:
    """The rule whose pattern ends at `parts[index]`, if any (a longer pattern first)."""
    name = parts[index]
    for pattern, rule in sorted(_BY_LAST.get(name, ()), key=lambda item: -len(item[0])):
        start = index + 1 - len(pattern)
        if start >= 0 and parts[start : index + 1] == pattern:
            return rule
    return next((rule for suffix, rule in _BY_SUFFIX if fnmatch.fnmatchcase(name, suffix)), None)


def protected_rule(parts: tuple[str, ...]) -> Rule | None:
    """The rule that protects the path `parts` (relative to the root), if any: the deepest
    match, so `.git/hooks/pre-commit` is protected by `.git/hooks`, not by `.git`."""
    for index in range(len(parts) - 1, -1, -1):
        rule = rule_at(parts, index)
        if rule is not None:
            return rule
    return None
