"""The chat app's responsiveness (a benchmark, not a test).

    python bench/tui.py [--project DIR] [--runs 5] [--screenshots DIR]

Without --project, generates a synthetic Python project of about 25,000 graph nodes (1,000
files x 24 symbols, with imports) under a temporary folder and indexes it once. Then, with a
temporary THEUS_HOME copy per run and the app headless at 120x40, prints medians of:

- first paint: App start -> the first screen painted (Textual's Ready event); and the same from
  a new process (Python start-up and imports included), as `theus` with no arguments pays it;
- usable graph panel: App start -> graph loaded and the panel's tree filled (F3 pressed at once);
- graph search: a query put in the panel's search box (once the start-up work is done) ->
  results listed;
- 32 KB reply: Enter -> a 32 KB Markdown answer streamed (8-character deltas from the scripted
  OpenAI-compatible server) and fully rendered.

With --screenshots, saves SVGs of the chat after the 32 KB reply and of the graph panel (and
PNGs if chromium or rsvg-convert is installed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from textual.screen import Screen
from textual.widgets import OptionList, Tree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from entrypoint.settings import apply as apply_settings
from knowledge.index.project import Project
from tests.scripted_server import ScriptedServer, text
from theus.config import AgentSettings, ModelSettings
from tui.app import TheusApp
from tui.screens.graph import GraphScreen
from tui.widgets.chat_items import AssistantReply

SIZE = (120, 40)
FILES = 1000
CLASSES, METHODS = 4, 5


def generate(root: Path, files: int = FILES) -> None:
    """Packages of modules, each with classes, methods and functions, importing neighbours."""
    for i in range(files):
        package = root / f"pkg{i // 50:02d}"
        package.mkdir(parents=True, exist_ok=True)
        lines = [
            f'"""Module {i}: billing step {i} of the pipeline."""',
            f"from pkg{(i + 1) % files // 50:02d}.mod{(i + 1) % files:04d} import "
            f"Handler{(i + 1) % files}_0",
            "",
        ]
        for c in range(CLASSES):
            lines += [f"class Handler{i}_{c}:", f'    """Handles case {c} of step {i}."""']
            for m in range(METHODS):
                lines += [
                    f"    def run_{m}_{i}(self, order, amount):",
                    f'        """Apply rule {m} to an order (step {i})."""',
                    f"        return amount * {m + 1}",
                    "",
                ]
        lines += [f"def helper_{i}(x):", f'    """Helper {i}."""', "    return x", ""]
        (package / f"mod{i:04d}.py").write_text("\n".join(lines), encoding="utf-8")


def reply_32k() -> str:
    part = (
        "## Step {n}\n\nThe **cart total** is computed by `Cart.total`, which sums "
        "`price_of(item)` for each line; discounts apply per item.\n\n- first point\n"
        "- second point with `code`\n\n```python\ndef total(items):\n    return "
        "sum(price_of(i) for i in items)\n```\n\n"
    )
    out: list[str] = []
    n = 0
    while sum(map(len, out)) < 32 * 1024:
        out.append(part.format(n=n))
        n += 1
    return "".join(out)[: 32 * 1024]


class Timed(TheusApp):
    """Records when the first screen was painted."""

    painted: float | None = None

    def on_ready(self) -> None:
        self.painted = time.perf_counter()


MARKS: dict[str, float] = {}


def _mark(cls: type, name: str) -> None:
    """Time-stamp the first call of cls.name: the moment the app did it, not the moment a
    polling pilot noticed (the pilot is slowed by the threads it measures)."""
    original = getattr(cls, name)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        MARKS.setdefault(name, time.perf_counter())
        return result

    setattr(cls, name, wrapper)


_mark(GraphScreen, "_fill_root")
_mark(GraphScreen, "_show_hits")


async def until(pilot: Any, condition: Any, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(str(condition))
        await pilot.pause(0.005)


async def startup_run(root: Path, shots: Path | None) -> tuple[float, float, float]:
    MARKS.clear()
    start = time.perf_counter()
    app = Timed(root, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        await until(
            pilot,
            lambda: (
                app.current_mode == "graph" and app.screen.query_one("#tree", Tree).root.children
            ),
        )
        usable = MARKS["_fill_root"] - start
        assert app.painted is not None
        first_paint = app.painted - start
        await app.workers.wait_for_complete()
        MARKS.pop("_show_hits", None)
        search_start = time.perf_counter()
        graph: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow below
        assert isinstance(graph, GraphScreen)
        graph.search_for("apply rule discount order")  # one change, one search
        results = app.screen.query_one("#results", OptionList)
        await until(pilot, lambda: results.option_count > 0)
        searched = MARKS["_show_hits"] - search_start
        if shots is not None:
            await pilot.press("enter", "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.save_screenshot(str(shots / "graph.svg"))
    return first_paint, usable, searched


async def stream_run(root: Path, body: str, shots: Path | None) -> float:
    with ScriptedServer([text(body)], chunk_chars=8) as server:
        settings = ModelSettings(
            base_url=server.url,
            api_key="k",
            model="test-model",
            source="bench",
            timeout_s=120.0,
            max_retries=0,
        )
        app = TheusApp(root, settings, agent_settings=AgentSettings(deadline_ms=2000))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.engine.loaded)
            await app.workers.wait_for_complete()
            await pilot.press(*"explain the total", "enter")
            start = time.perf_counter()
            await until(
                pilot,
                lambda: any(
                    r.text == body and r._stream is None for r in app.screen.query(AssistantReply)
                ),
            )
            await app.workers.wait_for_complete()
            await pilot.pause()
            took = time.perf_counter() - start
            if shots is not None:
                app.save_screenshot(str(shots / "chat.svg"))
    return took


CHILD = """
import sys, time
from pathlib import Path
from tui.app import TheusApp

class App(TheusApp):
    def on_ready(self) -> None:
        print(time.time() - float(sys.argv[2]), flush=True)
        self.exit()

App(Path(sys.argv[1]), None).run(headless=True, size=(120, 40))
"""


def process_paint(root: Path) -> float:
    """Seconds from spawning a Python process to the app's first paint (headless)."""
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), repr(started)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return float(done.stdout.strip().splitlines()[-1])


def to_png(svg: Path) -> Path | None:
    png = svg.with_suffix(".png")
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "-o", str(png), str(svg)], check=False)
    elif chromium := (shutil.which("chromium") or shutil.which("chromium-browser")):
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--screenshot={png}",
                "--window-size=1300,900",
                svg.as_uri(),
            ],
            capture_output=True,
            check=False,
            timeout=120,
        )
    return png if png.exists() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="theus-bench-tui-"))
    os.environ["THEUS_HOME"] = str(work / "home")
    os.environ["THEUS_NO_WATCH"] = "1"
    os.environ["THEUS_NO_EMBEDDINGS"] = "1"
    apply_settings({}, os.environ)
    root = args.project
    if root is None:
        root = work / "project"
        started = time.perf_counter()
        generate(root)
        print(f"generated {FILES} files in {time.perf_counter() - started:.1f} s")
    root = root.resolve()
    project = Project(root)
    started = time.perf_counter()
    project.index()
    nodes = len(project.graph)
    print(
        f"indexed: {nodes} nodes, {project.graph.edge_count()} edges "
        f"({time.perf_counter() - started:.1f} s)"
    )
    project.close()
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)

    paints, usables, searches = [], [], []
    for i in range(args.runs):
        shots = args.screenshots if i == args.runs - 1 else None
        paint, usable, search = asyncio.run(startup_run(root, shots))
        paints.append(paint)
        usables.append(usable)
        searches.append(search)
    process_paints = [process_paint(root) for _ in range(args.runs)]
    body = reply_32k()
    streams = [
        asyncio.run(stream_run(root, body, args.screenshots if i == 0 else None))
        for i in range(max(1, (args.runs + 1) // 2))
    ]
    med = statistics.median
    print(f"project: {nodes} nodes; runs: {args.runs}")
    print(
        f"first paint          median {med(paints) * 1000:7.0f} ms "
        f"(min {min(paints) * 1000:.0f}, max {max(paints) * 1000:.0f})"
    )
    print(
        f"first paint, process median {med(process_paints) * 1000:7.0f} ms "
        f"(min {min(process_paints) * 1000:.0f}, max {max(process_paints) * 1000:.0f})"
    )
    print(
        f"usable graph panel   median {med(usables) * 1000:7.0f} ms "
        f"(min {min(usables) * 1000:.0f}, max {max(usables) * 1000:.0f})"
    )
    print(f"graph search         median {med(searches) * 1000:7.0f} ms")
    print(
        f"32 KB reply streamed median {med(streams) * 1000:7.0f} ms "
        f"({len(body)} chars in {len(body) // 8} deltas; runs {len(streams)})"
    )
    if args.screenshots:
        for svg in sorted(args.screenshots.glob("*.svg")):
            png = to_png(svg)
            print(f"screenshot: {svg}" + (f" -> {png}" if png else ""))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
