"""One-shot commands and process lifecycle, timed from outside (a benchmark, not a test).

    python bench/cli.py [PATH ...] [--runs 7] [--query "..."] [--no-app] [--home DIR]
                        [--changes-only | --headless-only]

For each project (the PATHs, then this repository), with a temporary THEUS_HOME (or `--home`,
kept between calls: embedding a large project once takes many minutes) in which the project
is indexed (`theus index`, embeddings included), prints the median and min of
`--runs` runs (after one unrecorded warm-up) of, each a new process:

  recall            `theus recall --json QUERY` wall, THEUS_NO_EMBEDDINGS=1
  recall+emb        the same with the local embedding model
  status            `theus status` wall
  -p first request  `theus -p` against the scripted OpenAI-compatible server: process start ->
                    the server receives the chat request
  openai SDK floor  the same for a script that only imports openai and sends one chat
                    request: the least any agent on that SDK can do (a baseline), run
                    right after each `-p` so the pair shares the machine's load
  -p exit           the server has answered -> the process has exited
  app first paint   `theus` in a 120x40 pseudo-terminal: process start -> the footer drawn
  app quit          ctrl+q sent -> the process has exited

Then, on a scratch clone of the project (its own THEUS_HOME, indexed with --no-embed, so
commits and edits never touch the original), each run in turn, all THEUS_NO_EMBEDDINGS=1:

  index unchanged   `theus index --no-embed` with nothing changed
  index after edit  the same after appending a line to one file (the median-sized code file)
  after add         the same after a new code file beside it (in Python a function of a new
                    name, else a comment)
  after remove      the same after that file is deleted again
  after rename      the same after the edited file is renamed (then renamed back, unrecorded)
  recall            `theus recall --json QUERY`, nothing changed
  after commit      the same, first after `git commit --allow-empty`
  after switch      the same, first after `git checkout` of a branch 5 commits back, or back

Targets (the instant-commands issue, this machine's median): recall <= 300 ms without
embeddings and <= 700 ms with them; -p first request <= 500 ms, exit <= 300 ms after the
answer; app quit <= 300 ms. The in-place snapshot issue: index after edit, add, remove and
rename <= 1.5x index unchanged; recall after commit, after switch <= 1.5x recall; -p first
request <= 1.5x the SDK floor.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.scripted_server import Reply, ScriptedServer, text

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "entrypoint"]
FOOTER = b"Quit"  # the footer's last binding: the first full screen is on the terminal
PAINT_TIMEOUT_S = 60.0
SETTLE_S = float(os.environ.get("THEUS_BENCH_SETTLE_S", "2.0"))
T = TypeVar("T")


def base_env(home: Path) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE too: an installed Theus has its bytecode (pip compiles it), so
    # the warm-up run writes it here instead of every run compiling the sources again.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("THEUS_", "OPENAI_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["THEUS_HOME"] = str(home)
    return env


def timed(run: Callable[[], T | None], runs: int) -> list[T]:
    """`runs` figures after one warm-up; a run returning None is left out (and said)."""
    run()
    out = [x for _ in range(runs) if (x := run()) is not None]
    if len(out) < runs:
        print(f"    ({runs - len(out)} of {runs} runs failed and are left out)")
    return out


def wall(argv: list[str], env: dict[str, str]) -> float | None:
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        print(f"    exit {done.returncode}: {done.stderr.strip()[-200:]}")
        return None
    return took


def headless(root: Path, env: dict[str, str]) -> tuple[float, float] | None:
    """(process start -> first chat request, answer sent -> exit) of one `theus -p`."""
    arrived: list[float] = []

    def answer(body: dict[str, Any]) -> Reply:
        arrived.append(time.perf_counter())
        return text("The cart total is computed in one place.")

    with ScriptedServer([answer]) as server:
        run_env = {**env, "THEUS_BASE_URL": server.url, "THEUS_MODEL": "test-model"}
        start = time.perf_counter()
        done = subprocess.run(
            [*CLI, "--path", str(root), "-p", "where is the total computed"],
            env=run_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
        ended = time.perf_counter()
    if done.returncode != 0 or not arrived:
        print(f"    -p exit {done.returncode}: {done.stderr.strip()[-200:]}")
        return None
    return arrived[0] - start, ended - arrived[0]


# The least any agent on the openai SDK can do before its first request: import it, build the
# client, send one streaming chat request. Theus's `-p first request` is read against it.
SDK_FLOOR = """
import asyncio, os, openai
async def main():
    client = openai.AsyncOpenAI(base_url=os.environ["THEUS_BASE_URL"], api_key="k")
    stream = await client.chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "hi"}], stream=True)
    async for _ in stream:
        pass
asyncio.run(main())
"""


def sdk_floor(env: dict[str, str]) -> float | None:
    """Process start -> first chat request of the bare SDK script above."""
    arrived: list[float] = []

    def answer(body: dict[str, Any]) -> Reply:
        arrived.append(time.perf_counter())
        return text("ok")

    with ScriptedServer([answer]) as server:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", SDK_FLOOR],
            env={**env, "THEUS_BASE_URL": server.url},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    if done.returncode != 0 or not arrived:
        print(f"    sdk floor exit {done.returncode}: {done.stderr.strip()[-200:]}")
        return None
    return arrived[0] - start


def app(root: Path, env: dict[str, str]) -> tuple[float, float] | None:
    """(process start -> footer painted, ctrl+q -> exit) of the chat app in a pty."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the app on the terminal's slave side
        os.environ.clear()
        os.environ.update({**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"})
        os.execv(sys.executable, [*CLI, "--path", str(root)])
    start = time.perf_counter()
    seen = b""
    painted = None
    try:
        while time.perf_counter() - start < PAINT_TIMEOUT_S:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    seen = (seen + os.read(fd, 65536))[-4096:]
                except OSError:
                    break
                if FOOTER in seen:
                    painted = time.perf_counter() - start
                    break
        if painted is None:
            print("    the app painted no footer within the timeout")
            return None
        time.sleep(SETTLE_S)  # a user reads the screen before quitting
        quit_at = time.perf_counter()
        os.write(fd, b"\x11")  # ctrl+q
        while True:
            with contextlib.suppress(OSError):
                if select.select([fd], [], [], 0.02)[0]:
                    os.read(fd, 65536)
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return painted, time.perf_counter() - quit_at
            if time.perf_counter() - quit_at > PAINT_TIMEOUT_S:
                print("    the app did not quit within the timeout")
                return None
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os.close(fd)


def report(name: str, figures: list[float], target_ms: float | None = None) -> None:
    if not figures:
        print(f"  {name:18s} no figures")
        return
    median, low = statistics.median(figures) * 1000, min(figures) * 1000
    aim = (
        f"   target <= {target_ms:.0f} ms: {'met' if median <= target_ms else 'NOT met'}"
        if target_ms is not None
        else ""
    )
    print(f"  {name:18s} median {median:7.0f} ms   min {low:7.0f} ms   ({len(figures)} runs){aim}")


def _with_floor(root: Path, env: dict[str, str]) -> tuple[float, float, float] | None:
    """One `theus -p` and, right after it, the SDK floor: (first request, floor, exit), so
    the two are read under the same load (the machine is shared)."""
    run = headless(root, env)
    floor = sdk_floor(env) if run is not None else None
    return None if run is None or floor is None else (run[0], floor, run[1])


def bench_project(
    root: Path, runs: int, query: str, with_app: bool, keep: Path | None, headless_only: bool
) -> None:
    home = keep or Path(tempfile.mkdtemp(prefix="theus-bench-cli-"))
    try:
        env = base_env(home)
        start = time.perf_counter()
        index = subprocess.run(
            [*CLI, "--path", str(root), "index"],
            env=env,
            capture_output=True,
            text=True,
            timeout=7200,
        )
        if index.returncode != 0:
            print(f"# {root}: theus index failed: {index.stderr.strip()[-300:]}")
            return
        counts = subprocess.run(
            [*CLI, "--path", str(root), "status", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout
        nodes = _nodes(counts)
        print(
            f"# {root}: {nodes} nodes, indexed with embeddings in "
            f"{time.perf_counter() - start:.0f} s; {runs} runs each"
        )
        recall = [*CLI, "--path", str(root), "recall", "--json", query]
        no_emb = {**env, "THEUS_NO_EMBEDDINGS": "1"}
        if not headless_only:
            report("recall", timed(lambda: wall(recall, no_emb), runs), 300)
            report("recall+emb", timed(lambda: wall(recall, env), runs), 700)
            report("status", timed(lambda: wall([*CLI, "--path", str(root), "status"], env), runs))
        rows = timed(lambda: _with_floor(root, env), runs)
        report("-p first request", [first for first, _, _ in rows], 500)
        report("  openai SDK floor", [floor for _, floor, _ in rows])
        if rows:
            ratio = statistics.median(r[0] for r in rows) / statistics.median(r[1] for r in rows)
            print(
                f"  {'':18s} {ratio:.2f}x the floor   target <= 1.5x: "
                f"{'met' if ratio <= 1.5 else 'NOT met'}"
            )
        report("-p exit", [after for _, _, after in rows], 300)
        if with_app and not headless_only:
            pairs = timed(lambda: app(root, env), runs)
            report("app first paint", [a for a, _ in pairs])
            report("app quit", [b for _, b in pairs], 300)
    finally:
        if keep is None:
            shutil.rmtree(home, ignore_errors=True)


CODE_SUFFIXES = (".py", ".go", ".rs", ".ts", ".js", ".java", ".c", ".cpp", ".rb")
NEW_FILE = {".py": "def bench_added_{n}():\n    return {n}\n", ".rb": "# bench file {n}\n"}


def bench_changes(root: Path, runs: int, query: str) -> None:
    """The change rows of the module docstring, on a scratch clone of `root`."""
    scratch = Path(tempfile.mkdtemp(prefix="theus-bench-changes-"))
    try:
        clone = scratch / root.name
        git = ["git", "-C", str(clone), "-c", "user.name=bench", "-c", "user.email=b@b"]
        subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True, timeout=600)
        tracked = subprocess.run(
            [*git, "ls-files"], capture_output=True, text=True, check=True
        ).stdout.split("\n")
        code = sorted(
            (p for p in tracked if p.endswith(CODE_SUFFIXES)),
            key=lambda p: ((clone / p).stat().st_size, p),
        )
        if not code:
            print(f"# {root}: no code file to edit; change rows skipped")
            return
        edited = clone / code[len(code) // 2]
        side = subprocess.run([*git, "rev-parse", "HEAD~5"], capture_output=True, text=True)
        home = base_env(scratch / "home")
        env = {**home, "THEUS_NO_EMBEDDINGS": "1"}
        cli = [*CLI, "--path", str(clone)]
        index, recall = [*cli, "index", "--no-embed"], [*cli, "recall", "--json", query]
        start = time.perf_counter()
        if wall(index, env) is None:
            return
        print(
            f"# {root} (scratch clone): indexed --no-embed in "
            f"{time.perf_counter() - start:.0f} s; edits {edited.relative_to(clone)}; "
            f"{runs} runs each, in turn"
        )
        rows: dict[str, list[float]] = {}

        def timed_row(name: str, argv: list[str]) -> None:
            took = wall(argv, env)
            if took is not None:
                rows.setdefault(name, []).append(took)

        wall(recall, env)  # warm-up: bytecode, page cache
        for n in range(runs):
            timed_row("index unchanged", index)
            with open(edited, "a") as fh:
                fh.write(f"\n# bench edit {n}\n")
            timed_row("index after edit", index)
            added = edited.with_name(f"bench_added_{n}{edited.suffix}")
            added.write_text(NEW_FILE.get(edited.suffix, "// bench file {n}\n").format(n=n))
            timed_row("after add", index)
            added.unlink()
            timed_row("after remove", index)
            moved = edited.with_name(f"bench_moved_{n}{edited.suffix}")
            edited.rename(moved)
            timed_row("after rename", index)
            moved.rename(edited)
            wall(index, env)
            timed_row("recall", recall)
            subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", f"bench {n}"], check=True)
            timed_row("after commit", recall)
            if side.returncode == 0:
                subprocess.run([*git, "stash", "-q"], check=True)
                subprocess.run([*git, "checkout", "-q", side.stdout.strip()], check=True)
                timed_row("after switch", recall)
                subprocess.run([*git, "checkout", "-q", "-"], check=True)
                subprocess.run([*git, "stash", "pop", "-q"], check=True)
                timed_row("after switch", recall)
                wall(index, env)  # the files are as indexed again: settle their times
        for name, base in (
            ("index unchanged", None),
            ("index after edit", "index unchanged"),
            ("after add", "index unchanged"),
            ("after remove", "index unchanged"),
            ("after rename", "index unchanged"),
            ("recall", None),
            ("after commit", "recall"),
            ("after switch", "recall"),
        ):
            report(name, rows.get(name, []))
            if base is not None and rows.get(name) and rows.get(base):
                ratio = statistics.median(rows[name]) / statistics.median(rows[base])
                print(
                    f"  {'':18s} {ratio:.2f}x {base}   target <= 1.5x: "
                    f"{'met' if ratio <= 1.5 else 'NOT met'}"
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _nodes(status_json: str) -> int:
    import json

    try:
        counts = json.loads(status_json)["index"]["counts"]
    except (ValueError, KeyError, TypeError):
        return 0
    return sum(v for k, v in counts.items() if k != "edges" and isinstance(v, int))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="projects (this repository last)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--query", default="where is the retry deadline of a model request")
    parser.add_argument("--no-app", action="store_true", help="leave the chat app out")
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="THEUS_HOME to use and keep (indexes and embeddings reused)",
    )
    parser.add_argument(
        "--changes-only",
        action="store_true",
        help="only the rows after an edit, a commit, a branch switch",
    )
    parser.add_argument(
        "--headless-only",
        action="store_true",
        help="only the -p rows and the SDK floor",
    )
    args = parser.parse_args()
    for root in [*args.paths, REPO]:
        if not args.changes_only:
            bench_project(
                root.resolve(),
                args.runs,
                args.query,
                not args.no_app,
                args.home,
                args.headless_only,
            )
        if not args.headless_only:
            bench_changes(root.resolve(), args.runs, args.query)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
