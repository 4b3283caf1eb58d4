"""Where the agent's shell commands run: inside a bubblewrap sandbox, whoever runs Theus.

    with sandboxed(command, root, protect=True) as launch:   # None: no sandbox here
        run launch.argv with pass_fds=launch.pass_fds
    moved = put_aside_new_protected(root, launch.before)      # what the command created

Inside (the same for root and for an ordinary user):
- no capabilities: a user namespace maps the caller to an unprivileged id, every capability is
  dropped, no nested user namespace can be made, and a seccomp filter (`seccomp`) refuses
  mount, umount, setns, ptrace, keys, modules, BPF and new namespaces;
- the filesystem read-only but the project; a private /tmp and /run (no Unix sockets of the
  machine's services); the home folder empty, with only the toolchains a build needs
  (`TOOLCHAIN_HOME_DIRS`, and what PATH names under it) bound read-only; Theus's data and config
  hidden; as root, the files of /etc only root may read hidden too;
- the project's secrets files (`.env*`, keys, credentials: the indexer's rule) hidden at any
  depth, `node_modules` and `build` included;
- the protected files (`protected.RULES`: hooks, CI, agent and editor configuration, build
  set-up) read-only unless `--allow-config-edits`; one the command created is moved aside after
  it (`put_aside_new_protected`);
- its own PID namespace and /proc, so Theus's processes and their environment are out of sight;
  its own network namespace with nothing in it unless THEUS_SHELL_NETWORK=1; everything the
  command started dies with it, `setsid` children included.

The environment is built from an allow-list, never the agent's minus a deny-list: a key whose
name nobody thought of does not leak. THEUS_SHELL_ENV adds names (comma-separated).
Without bubblewrap there is no sandbox: the shell asks (the app) or refuses unless
`--allow-unsandboxed-shell` (headless); THEUS_NO_SANDBOX=1 says to run unconfined on purpose.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from knowledge.core.errors import TheusError
from knowledge.core.paths import config_home, data_home
from knowledge.index.ignore import DEFAULT_EXCLUDED_DIRS, is_secret
from theus.settings import current
from theus.tools import seccomp
from theus.tools.protected import Rule, rule_at

ENV_ALLOWED = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "TZ",
        "TMPDIR",
        "EDITOR",
        "PAGER",
        "CI",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYENV_ROOT",
        "PYENV_VERSION",
        "GOPATH",
        "GOROOT",
        "GOFLAGS",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "JAVA_HOME",
        "NODE_PATH",
        "NVM_DIR",
    }
)
ENV_PREFIXES_ALLOWED = ("LC_",)
# Relative to the home folder: toolchains and the settings a build reads, bound read-only into
# the otherwise empty home. Never a folder that keeps a key (`.cargo` holds credentials, so
# only its `bin`; `.m2` and `.gradle` hold them in settings, so only their caches).
TOOLCHAIN_HOME_DIRS = (
    ".pyenv",
    ".rbenv",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".sdkman",
    ".asdf",
    ".rustup",
    ".cargo/bin",
    ".local/bin",
    ".local/lib",
    "go",
    ".nix-profile",
    ".elan",
    ".ghcup",
    ".juliaup",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    ".pixi",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
    ".gitconfig",
    ".config/git",
)
# Variables that name a toolchain folder, bound read-only where they point into the home.
TOOLCHAIN_VARIABLES = (
    "PYENV_ROOT",
    "RUSTUP_HOME",
    "NVM_DIR",
    "GOROOT",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
)
# Where keys live, hidden one by one when the home cannot be hidden whole (the project is the
# home folder, or holds it).
HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".docker",
    ".kube",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pgpass",
    ".codex",
    ".claude",
    ".claude.json",
    ".cache/huggingface",
    ".huggingface",
    ".vault-token",
    ".config/rclone",
    ".s3cfg",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".local/share/keyrings",
    ".password-store",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".node_repl_history",
    ".lesshst",
)
SCAN_ENTRIES = 1_000_000  # a project with more is refused: its secrets could not all be found
# As root: where the machine keeps what only root may read (shadow, host keys, backups).
ROOT_ONLY_TOPS = (Path("/etc"), Path("/var"), Path("/srv"), Path("/home"), Path("/opt"))
ROOT_ONLY_DEPTH = 3
SANDBOX_UID = 1000  # who root becomes inside: an ordinary id, owning what root owns outside
PEM_READ = 4 << 20  # a certificate bundle read whole to tell it from a key: larger is a secret
NO_SANDBOX = (
    "no sandbox on this machine (install bubblewrap): the command runs with your permissions"
)


class TooLarge(TheusError):
    """The project has more entries than the secrets scan reads."""


def shell_env(environ: Mapping[str, str], more: str = "") -> dict[str, str]:
    """What of `environ` a command gets: the allow-list, plus the names in `more`
    (comma-separated: the `shell_env` setting)."""
    extra = {name.strip() for name in more.split(",")}
    allowed = ENV_ALLOWED | (extra - {""})
    return {k: v for k, v in environ.items() if k in allowed or k.startswith(ENV_PREFIXES_ALLOWED)}


@dataclass(frozen=True, slots=True)
class Bubblewrap:
    path: str
    isolation: tuple[str, ...]  # the namespace and capability flags this machine's bwrap takes


# Strongest first: an old bubblewrap lacks --disable-userns (the seccomp filter still refuses
# new namespaces); a setuid one on a machine without user namespaces drops privileges itself.
_ISOLATIONS = (
    ("--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
    ("--unshare-user", "--cap-drop", "ALL"),
    ("--cap-drop", "ALL"),
)


@functools.cache
def bubblewrap() -> Bubblewrap | None:
    """bubblewrap when it works here, with the strongest isolation it supports."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    for isolation in _ISOLATIONS:
        uid = _uid_flags(isolation)
        try:
            probe = subprocess.run(
                [found, *isolation, *uid, "--ro-bind", "/", "/", "--unshare-pid", "--", "true"],
                capture_output=True,
                timeout=10,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if probe.returncode == 0:
            return Bubblewrap(found, isolation)
    return None


def _uid_flags(isolation: tuple[str, ...]) -> list[str]:
    if "--unshare-user" not in isolation:
        return []
    uid, gid = os.getuid() or SANDBOX_UID, os.getgid() or SANDBOX_UID
    return ["--uid", str(uid), "--gid", str(gid)]


@dataclass(slots=True)
class ProjectScan:
    """What the sandbox hides and protects in the project, found by one walk."""

    secrets: list[Path] = field(default_factory=list)
    protected: dict[Path, Rule] = field(default_factory=dict)
    links: dict[Path, str] = field(default_factory=dict)  # protected symbolic links: targets


@dataclass(frozen=True, slots=True)
class Launch:
    argv: list[str]
    pass_fds: tuple[int, ...]
    before: ProjectScan


def sandbox_available() -> bool:
    """Whether commands run sandboxed here (bubblewrap works, THEUS_NO_SANDBOX is not set)."""
    return bubblewrap() is not None and not current().no_sandbox


@contextlib.contextmanager
def sandboxed(command: str, root: Path, *, protect: bool = True) -> Iterator[Launch | None]:
    """The launch of `command` with /bin/sh in the sandbox, or None when there is none here
    (or THEUS_NO_SANDBOX=1). `protect`: protected files read-only. Raises TooLarge."""
    tool = bubblewrap()
    if tool is None or not sandbox_available():
        yield None
        return
    scan = scan_project(root)
    network = current().shell_network
    argv = [
        tool.path,
        *tool.isolation,
        *_uid_flags(tool.isolation),
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        *_hide_sockets(root),
        "--tmpfs",
        "/tmp",
        *_hide_run(root, network),
        *_hide_home(root, os.environ),
        *_hide_theus(root),
        *_hide_root_only_files(root),
        "--bind",
        str(root),
        str(root),
        *_hide_secrets(scan),
    ]
    if protect:
        for path in scan.protected:
            argv += ["--ro-bind", str(path), str(path)]
    if not network:
        argv.append("--unshare-net")
    read_end = None
    if seccomp.supported():
        read_end, write_end = os.pipe()
        with os.fdopen(write_end, "wb") as pipe:  # a few hundred bytes: never blocks
            pipe.write(seccomp.program())
        argv += ["--seccomp", str(read_end)]
    try:
        yield Launch(
            [*argv, "--chdir", str(root), "--", "/bin/sh", "-c", command],
            (read_end,) if read_end is not None else (),
            scan,
        )
    finally:
        if read_end is not None:
            os.close(read_end)


def scan_project(root: Path) -> ProjectScan:
    """Every secrets file and every protected path in the project, at any depth. The inside of
    a `.git` folder is not walked: its hooks, config and info are looked up by name."""
    scan = ProjectScan()
    budget = SCAN_ENTRIES
    # (folder, its parts, generated): below dependencies and build output (`node_modules`,
    # `.venv`, `build`) only secrets are looked for; tools write the rest there.
    folders: list[tuple[Path, tuple[str, ...], bool]] = [(root, (), False)]
    while folders:
        folder, parts, generated = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        budget -= len(entries)
        if budget < 0:
            raise TooLarge(
                f"the project has more than {SCAN_ENTRIES:,} files and folders: too "
                "many to find every secrets file before a command runs"
            )
        for entry in entries:
            name = entry.name
            path = Path(entry.path)
            here = (*parts, name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_secret(name) or (name.lower().startswith(".env") and name != ".envrc"):
                # a dangling link shows nothing (and cannot be covered); a CA bundle in a
                # package (`certifi/cacert.pem`) is public, and TLS needs it
                if os.path.exists(path) and not _public_certificates(path):
                    scan.secrets.append(path)
                continue
            rule = None if generated else rule_at(here, len(here) - 1)
            if rule is not None and not rule.shell_writable:
                if entry.is_symlink():  # a mount would land on its target: watched instead
                    scan.links[path] = os.readlink(path)
                else:
                    scan.protected[path] = rule
            if name == ".git" and is_dir:
                for inner in ("hooks", "config", "info"):
                    inside = (*here, inner)
                    rule = rule_at(inside, len(inside) - 1)
                    if rule is not None and os.path.lexists(path / inner):
                        scan.protected[path / inner] = rule
            elif is_dir:
                folders.append(
                    (path, here, generated or (rule is None and name in DEFAULT_EXCLUDED_DIRS))
                )
    return scan


def _public_certificates(path: Path) -> bool:
    """A `.pem` of certificates only: no private key in it."""
    if not path.name.lower().endswith(".pem"):
        return False
    try:
        with path.open("rb") as file:
            head = file.read(PEM_READ)
    except OSError:
        return False
    return b"CERTIFICATE-----" in head and b"PRIVATE KEY" not in head and len(head) < PEM_READ


def put_aside_new_protected(root: Path, before: ProjectScan) -> list[str]:
    """Protected paths the command created (it could not change those that existed: they were
    read-only), moved out of the project into Theus's data folder, never deleted: a folder
    renamed onto a protected name keeps its files. Returns the project-relative paths."""
    try:
        after = scan_project(root)
    except TooLarge:
        return []
    new = {*after.protected, *after.links} - {*before.protected, *before.links}
    created = [
        path
        for path in new
        if not any(path.is_relative_to(other) for other in new if other != path)
    ]
    # A protected link the command replaced (its folder was writable): put back as it was.
    changed = [path for path, target in before.links.items() if after.links.get(path) != target]
    if not created and not changed:
        return []
    aside = data_home() / "put-aside" / time.strftime("%Y%m%d-%H%M%S")
    moved = []
    for path in sorted(created):
        rel = path.relative_to(root)
        target = aside / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(path, target)
        except OSError:
            with contextlib.suppress(OSError):  # never left in place to run later
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        moved.append(rel.as_posix())
    for path in changed:
        with contextlib.suppress(OSError):
            if os.path.lexists(path):
                target = aside / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)
            os.symlink(before.links[path], path)
            moved.append(path.relative_to(root).as_posix())
    return sorted(moved)


def _hide_secrets(scan: ProjectScan) -> list[str]:
    argv: list[str] = []
    for path in scan.secrets:
        argv += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    return argv


def _hide_sockets(root: Path) -> list[str]:
    """Every Unix socket bound on a path outside the project (the kernel lists them all), so
    no service of the machine can be reached through one: ssh and gpg agents, docker, D-Bus.
    A socket made later, while the command runs, is not covered."""
    try:
        table = Path("/proc/net/unix").read_text(errors="replace").splitlines()[1:]
    except OSError:
        return []
    argv: list[str] = []
    for line in table:
        fields = line.split(maxsplit=7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed or abstract (the network namespace holds those)
        path = Path(fields[7])
        try:
            is_socket = stat.S_ISSOCK(path.lstat().st_mode)
        except OSError:
            continue
        if is_socket and not path.is_relative_to(root):
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def _hide_run(root: Path, network: bool) -> list[str]:
    """A private /run (and /var/run where it is a folder of its own): the machine's service
    sockets live there. With network, the resolver's file stays readable."""
    argv: list[str] = []
    for run in (Path("/run"), Path("/var/run")):
        if run.is_dir() and not run.is_symlink() and not root.is_relative_to(run):
            argv += ["--tmpfs", str(run)]
    resolv = Path(os.path.realpath("/etc/resolv.conf"))
    if network and resolv.is_relative_to("/run") and resolv.is_file():
        argv += ["--ro-bind", str(resolv), str(resolv)]
    return argv


def _hide_home(root: Path, environ: Mapping[str, str]) -> list[str]:
    """An empty home with the toolchains bound read-only; when the project is the home (or
    holds it), the key stores one by one instead. As root, /root too."""
    homes = {Path(environ["HOME"])} if environ.get("HOME") else set()
    if os.geteuid() == 0:
        homes.add(Path("/root"))
    argv: list[str] = []
    for home in homes:
        if not home.is_dir() or home == Path("/"):
            continue
        if home == root or home.is_relative_to(root):
            argv += _hide_each(home, HOME_SECRETS)
            continue
        argv += ["--tmpfs", str(home)]
        wanted = [home / name for name in TOOLCHAIN_HOME_DIRS]
        wanted += [
            _toolchain_root(home, Path(p))
            for p in environ.get("PATH", "").split(":")
            if p and Path(p).is_relative_to(home)
        ]
        wanted += [
            Path(environ[name])
            for name in TOOLCHAIN_VARIABLES
            if environ.get(name) and Path(environ[name]).is_relative_to(home)
        ]
        for path in dict.fromkeys(wanted):
            if path.exists() and path != home and not root.is_relative_to(path):
                argv += ["--ro-bind", str(path), str(path)]
        argv += _hide_each(home, HOME_SECRETS)  # a toolchain folder may hold one
    return argv


def _toolchain_root(home: Path, entry: Path) -> Path:
    """The folder to bind for a PATH entry under the home: the entry itself, or for a shims or
    bin folder, its toolchain's whole folder (pyenv's shims need its versions)."""
    rel = entry.relative_to(home).parts
    if len(rel) >= 2 and rel[-1] in ("bin", "shims") and rel[0].startswith("."):
        return home / rel[0] if rel[0] not in (".local", ".cargo") else entry
    return entry


def _hide_each(home: Path, names: tuple[str, ...]) -> list[str]:
    argv: list[str] = []
    for name in names:
        path = home / name
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def _hide_theus(root: Path) -> list[str]:
    argv: list[str] = []
    for folder in (data_home(), config_home()):
        if folder.is_dir() and not root.is_relative_to(folder):
            argv += ["--tmpfs", str(folder)]
    return argv


def _hide_root_only_files(root: Path) -> list[str]:
    """As root, the sandbox's user still owns what root owns: the files of /etc that only root
    may read (shadow, the host's SSH keys, sudoers) are hidden."""
    if os.geteuid() != 0:
        return []
    argv: list[str] = []
    for path, is_dir in _root_only():  # found once a process; gone since: skipped
        if not (root.is_relative_to(path) or path.is_relative_to(root)) and os.path.lexists(path):
            argv += ["--tmpfs", str(path)] if is_dir else ["--ro-bind", "/dev/null", str(path)]
    return argv


@functools.cache
def _root_only() -> tuple[tuple[Path, bool], ...]:
    """Files and folders under ROOT_ONLY_TOPS that others may not read (folders: enter),
    `ROOT_ONLY_DEPTH` levels down; a folder found is hidden whole and not entered."""
    found: list[tuple[Path, bool]] = []
    folders = [(top, 0) for top in ROOT_ONLY_TOPS]
    while folders:
        folder, depth = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if not mode & stat.S_IXOTH:
                    found.append((Path(entry.path), True))
                elif depth < ROOT_ONLY_DEPTH:
                    folders.append((Path(entry.path), depth + 1))
            elif stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                found.append((Path(entry.path), False))
    return tuple(found)
