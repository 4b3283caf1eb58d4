"""The Textual app: `theus` with no arguments. Chat plus graph, episodes and memories panels.

The first screen paints before the graph is loaded: the project, the watcher and the memory
bridge start in a thread worker and every layer fails open.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from textual import on, work
from textual.app import App, ScreenStackError
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from theus.config import AgentSettings, ModelSettings
from theus.permissions import Permissions
from theus.printable import PrintableFormatter
from theus.protocol import Message, Usage
from tui.commands import AppCommands
from tui.engine import Engine
from tui.mcp_servers import McpServers
from tui.messages import GraphLoaded, IndexChanged, InjectedTokens, RecallDone
from tui.slash import REGISTRY
from tui.widgets.status_bar import StatusBar, embedding_text, short_switches, watcher_text

if TYPE_CHECKING:  # the chat screen is loaded with its mode
    from textual.driver import Driver

    from knowledge.index.project import Project
    from tui.screens.chat import ChatScreen

log = logging.getLogger(__name__)

STATUS_EVERY_S = 2.0
QUIT_WINDOW_S = 2.0  # a second Ctrl+C within this quits, as in Claude Code
# `/dashboard`: (project, status report) -> (url, stop). The entry point hands in the dashboard
# front end's starter: front ends are siblings, and never import each other.
DashboardStarter = Callable[
    ["Project", Callable[[], dict[str, Any]]], tuple[str, Callable[[], None]]
]


def _lazy(panel: str) -> Callable[[], Screen[Any]]:
    """The factory of a panel's screen, `<Panel>Screen` in `tui/screens/<panel>.py`: its
    module is imported on first use."""

    def make() -> Screen[Any]:
        import importlib

        module = importlib.import_module(f"tui.screens.{panel}")
        screen: Screen[Any] = getattr(module, f"{panel.capitalize()}Screen")()
        return screen

    return make


class TheusApp(App[int]):
    TITLE = "theus"
    MODES: ClassVar[dict[str, Any]] = {c.panel: _lazy(c.panel) for c in REGISTRY if c.panel}
    DEFAULT_MODE = "chat"
    COMMANDS = App.COMMANDS | {AppCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        *REGISTRY.bindings("app"),
        # Priority, so the request box's copy does not take it: Ctrl+C stops, as in a shell.
        Binding(
            "ctrl+c",
            "interrupt",
            "Interrupt",
            id="app.interrupt",
            show=False,
            priority=True,
            tooltip="Stop the running turn; twice within 2 s quits",
        ),
    ]

    def __init__(
        self,
        root: Path,
        model_settings: ModelSettings | None,
        *,
        resume: list[Message] | None = None,
        session: Any = None,
        agent_settings: AgentSettings | None = None,
        pick_session: bool = False,
        first_request: str = "",
        end_process: Callable[[int], NoReturn] | None = None,
        dashboard: DashboardStarter | None = None,
    ) -> None:
        super().__init__()
        # Given (a real run, not a test): quitting restores the terminal and ends the process
        # once the memory is closed, instead of Textual's teardown, which unmounts every
        # widget one by one (~0.2 s of a quit on a large project, for nothing).
        self._end_process = end_process
        self._start_dashboard = dashboard
        self.agent_settings = agent_settings
        self.engine = Engine(root)
        # MEMORY.md synced into the graph (the bridge's thread): refresh the memories panel.
        self.engine.memory.on_memories = lambda: self.post_message(IndexChanged("memories"))
        self.model_settings = model_settings
        self.resume = resume
        self.resume_session = session
        self.pick_session = pick_session  # `theus -r` with no id: the chat opens the picker
        self.first_request = first_request  # `theus "prompt"`: the chat sends it at once
        self.chat: ChatScreen | None = None  # set when the chat screen mounts
        self.permissions = Permissions(root)
        self._last_interrupt = -QUIT_WINDOW_S
        self.status: dict[str, Any] = {
            "model": model_settings.model if model_settings else "no model",
            "counts": {},
            "indexing": True,
            "failed": "",
            "watcher": "",
            "recall_ms": None,
            "turn_tokens": 0,
            "total_tokens": 0,
            "off": (),
            "tokens_in": 0,
            "tokens_out": 0,
            "cost": None,
            "memory_tokens": 0,
            "extraction_tokens": 0,
            "mcp": "",
            "embedding": "",
        }
        self.status_bars: set[StatusBar] = set()
        self._agents: list[Any] = []
        self._closed_agents: list[Any] = []
        self._resume_hint = ""
        self._memory_closing: threading.Thread | None = None
        self._dashboard: tuple[str, Callable[[], None]] | None = None
        self._graph_version = -1
        self._status_busy = False
        self.mcp = McpServers(root)

    # -- start ----------------------------------------------------------------------------------
    def on_mount(self) -> None:
        from knowledge.core.settings import current

        self.set_keymap(load_keymap())
        self.update_status(off=short_switches(current().switched_off()))
        # A daemon thread, not a Textual thread worker: those run in the event loop's default
        # executor, which the loop joins at exit, so quitting would wait for the graph load.
        threading.Thread(target=self.load_graph, name="theus-load", daemon=True).start()
        self.mcp.start()
        self.set_interval(STATUS_EVERY_S, self.refresh_status)

    def load_graph(self) -> None:
        try:
            self.engine.load()
        except Exception as exc:
            log.exception("the project could not be loaded")
            self.post_message(GraphLoaded(str(exc)))
            return
        self.post_message(GraphLoaded())
        self.engine.warm()

    def on_graph_loaded(self, message: GraphLoaded) -> None:
        if message.error:
            self.notify(
                f"project memory unavailable: {message.error}", severity="error", markup=False
            )
            self.update_status(failed=message.error[:60])
        self.refresh_status()

    def on_index_changed(self, message: IndexChanged) -> None:
        """The watcher or the memory bridge changed the graph: refresh what is on screen."""
        if message.line != "graph":
            self.refresh_status()
        try:
            screen = self.screen
        except ScreenStackError:  # between two modes' screens: the next one reads it fresh
            return
        follow = getattr(screen, "graph_changed", None)
        if follow is not None:
            follow()

    # -- status bar -----------------------------------------------------------------------------
    def update_status(self, **fields: Any) -> None:
        self.status.update(fields)
        for bar in self.status_bars:
            bar.set_reactive_fields(self.status)

    def refresh_status(self) -> None:
        self.update_status(mcp=self.mcp.status_word())
        agent = self.chat.agent if self.chat is not None else None
        if agent is not None:  # extraction calls end after their turn's answer
            self.update_status(extraction_tokens=agent.usage.extraction_tokens)
        for failure in self.mcp.new_failures():  # one warning each; the chat goes on
            self.notify(failure, severity="warning", markup=False)
        if self.engine.loaded:
            if not self._status_busy:
                self._status_busy = True
                self.gather_status()
        else:
            self.update_status(indexing=True)

    @work(thread=True, group="status", exit_on_error=False)
    def gather_status(self) -> None:
        """Counts and watcher state, off the event loop: the graph lock may be held for a
        while (recall warm-up, a big re-index). One at a time (`_status_busy`)."""
        try:
            semantic = self.engine.memory.semantic
            fields: dict[str, Any] = {
                "watcher": self._watcher_state(),
                "embedding": embedding_text(semantic.progress if semantic else None),
            }
            graph = self.engine.project.graph
            version = graph.version
            counts = self.engine.counts() if version != self._graph_version else None
            moved = counts is not None  # a busy graph is counted on a later tick
            if moved:
                fields["counts"] = counts
                self._graph_version = version
            if self._graph_version != -1:  # "indexing" until the graph was counted once
                fields["indexing"] = False
            self.call_from_thread(self.update_status, **fields)
            if moved:  # the watcher re-indexed something: refresh the panel on screen
                self.post_message(IndexChanged("graph"))
        finally:
            self._status_busy = False

    def _watcher_state(self) -> str:
        try:
            from knowledge import watch

            return watcher_text(
                watch.status_section(self.engine.project, self.engine.memory.watcher)
            )
        except Exception:
            return "watch –"

    def show_usage(self, usage: Usage) -> None:
        """The session's tokens so far (its subagents' too), priced where a table says how."""
        from theus.pricing import cost_usd

        model = self.model_settings.model if self.model_settings else ""
        self.update_status(
            tokens_in=usage.prompt_tokens,
            tokens_out=usage.completion_tokens,
            cost=cost_usd(model, usage.prompt_tokens, usage.completion_tokens),
            memory_tokens=usage.ledger.block + usage.ledger.examples,
            extraction_tokens=usage.extraction_tokens,
        )

    def reset_usage(self) -> None:
        """A new session (or a resumed one) starts its own figures."""
        self.update_status(
            tokens_in=0,
            tokens_out=0,
            cost=None,
            turn_tokens=0,
            total_tokens=0,
            memory_tokens=0,
            extraction_tokens=0,
        )

    async def action_interrupt(self) -> None:
        """Ctrl+C: stop the running turn; a second press within `QUIT_WINDOW_S` quits."""
        now = time.monotonic()
        if now - self._last_interrupt < QUIT_WINDOW_S:
            await self.action_quit()
            return
        self._last_interrupt = now
        stopped = self.chat is not None and self.chat.interrupt()
        self.notify(
            ("Interrupted. " if stopped else "") + "Press Ctrl+C again to quit",
            timeout=QUIT_WINDOW_S,
        )

    def on_recall_done(self, message: RecallDone) -> None:
        self.update_status(recall_ms=message.took_ms)

    def on_injected_tokens(self, message: InjectedTokens) -> None:
        self.update_status(
            recall_ms=message.took_ms,
            turn_tokens=message.tokens,
            total_tokens=self.status["total_tokens"] + message.tokens,
        )

    @on(Worker.StateChanged)
    def worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.notify(
                f"{event.worker.name or 'a task'} failed: {event.worker.error}",
                severity="error",
                markup=False,
            )

    # -- panels and actions ---------------------------------------------------------------------
    async def action_run_command(self, name: str) -> None:
        """A command's key or palette entry: run it as if typed with nothing after its name;
        one that answers in the chat brings the chat forward first."""
        command = REGISTRY[name]
        if not command.anywhere and self.current_mode != "chat":
            await self.switch_mode("chat")
        assert self.chat is not None  # the default mode: mounted before any key is read
        await self.chat.run_command(command, "")

    async def open_panel(self, name: str, query: str = "") -> None:
        await self.switch_mode(name)
        if name == "graph" and query:
            from tui.screens.graph import GraphScreen  # loaded by the switch

            screen: Screen[Any] = self.screen  # as `Screen[object]` it would not narrow below
            if isinstance(screen, GraphScreen):
                screen.search_for(query)

    def show_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    @work(thread=True, group="remember", exit_on_error=False)
    def remember(self, text: str) -> None:
        from knowledge import memdir

        change = memdir.add_memory(self.engine.project, text)
        note = "remembered" if change.created else "already remembered"
        self.call_from_thread(self.notify, f"{note}: {text[:60]}")
        self.post_message(IndexChanged("memories"))

    def dashboard_url(self) -> str:
        """Serve the live graph in the browser (started once, stopped with the app)."""
        if self._start_dashboard is None:
            return "not served by this app (run `theus dashboard` beside it)"
        if self._dashboard is None:
            from knowledge.memory.status import gather

            project, memory = self.engine.load(), self.engine.memory
            self._dashboard = self._start_dashboard(project, lambda: gather(project, memory))
        return self._dashboard[0]

    def switch_model(self, name: str) -> str:
        import dataclasses

        settings = self.model_settings
        if not name:
            return (
                f"model: {settings.model} ({settings.source})"
                if settings
                else "no model configured: set THEUS_BASE_URL, THEUS_API_KEY and "
                "THEUS_MODEL, or run `theus login`"
            )
        if settings is None:
            return "cannot switch: no model server configured (THEUS_BASE_URL or `theus login`)"
        self.model_settings = dataclasses.replace(settings, model=name)
        for agent in self._agents:
            from theus.model import ModelClient

            agent.model = ModelClient(self.model_settings)
        self.update_status(model=name)
        return f"model switched to {name}"

    # -- the agent --------------------------------------------------------------------------------
    def make_agent(self, sink: Callable[[Any], None], approver: Any) -> Any:
        from theus.agent.setup import make_agent
        from theus.sessions import SessionStore

        assert self.model_settings is not None
        root = self.engine.root
        session, messages = self.resume_session, self.resume
        self.resume_session = self.resume = None
        if session is None:
            session = SessionStore(root).create(
                root=str(root), model=self.model_settings.model, headless=False
            )
        agent = make_agent(
            self.engine.memory,
            self.model_settings,
            session,
            sink=sink,
            approver=approver,
            settings=self.agent_settings,
            messages=messages,
        )
        self._agents.append(agent)
        return agent

    def end_agent(self, agent: Any) -> None:
        if agent is None:
            return
        try:
            agent.end_session()
        except Exception as exc:
            log.warning("session end failed: %s", exc)
        if agent in self._agents:
            self._agents.remove(agent)

    async def action_quit(self) -> None:
        """Quit: the memory starts closing now, beside Textual's own teardown (or instead of
        it, see `end_process`)."""
        self._start_closing()
        if self._end_process is not None:
            if self._driver is not None:
                _restore_terminal(self._driver)
            await self._finish_closing()
            self._say_how_to_resume()
            self._end_process(self.return_code or 0)
        await super().action_quit()

    def resume_hint(self) -> str:
        """How to go on with the last conversation that asked anything ("" when none did)."""
        for agent in reversed(self._closed_agents):
            session = getattr(agent, "session", None)
            if session is not None and any(m.get("role") == "user" for m in agent.messages):
                return f"Resume this session with: theus -r {session.id}\n"
        return ""

    def _say_how_to_resume(self) -> None:
        hint, terminal = self._resume_hint, sys.__stdout__  # Textual may still hold sys.stdout
        self._resume_hint = ""  # said once
        if hint and terminal is not None:
            with contextlib.suppress(OSError, ValueError):  # a closed terminal: nothing to say
                terminal.write(hint)
                terminal.flush()

    def _start_closing(self) -> None:
        """End every session (its episode), then stop the memory on a thread. Once."""
        if self._memory_closing is not None:
            return
        for agent in list(self._agents):
            self.end_agent(agent)
            self._closed_agents.append(agent)
        self._resume_hint = self.resume_hint()  # said once the terminal is given back
        if self._dashboard is not None:
            self._dashboard[1]()
        self.mcp.close()
        self._memory_closing = threading.Thread(
            target=self.engine.close, name="theus-close", daemon=True
        )
        self._memory_closing.start()

    async def on_unmount(self) -> None:
        self._start_closing()  # any other way out (an error) too
        await self._finish_closing()

    async def _finish_closing(self) -> None:
        """The model clients closed, the memory closed (each layer waits briefly)."""
        for agent in self._closed_agents:
            try:
                if agent.facts is not None:  # its own model client, if it has one
                    await agent.facts.close()
                await agent.model.close()
            except Exception as exc:
                log.info("model client close failed: %s", exc)
        self._closed_agents.clear()
        assert self._memory_closing is not None
        self._memory_closing.join()


def _restore_terminal(driver: Driver) -> None:
    """What Textual does last, the terminal as it was, without joining its input thread: that
    thread polls every 0.1 s and is waited for twice over (up to 0.2 s of a quit), and the
    process ends next. `_key_thread` is LinuxDriver's (textual is pinned in pyproject)."""
    if getattr(driver, "_key_thread", None) is not None:
        driver._key_thread = None  # type: ignore[attr-defined]
    driver.stop_application_mode()
    driver.close()  # its writer thread flushes what is queued, then ends


def load_keymap() -> dict[str, str]:
    """The user's key overrides: `keymap.json` in the config folder maps binding ids to keys,
    e.g. {"app.graph": "ctrl+g", "memories.delete": "x"}. A bad file is ignored (logged)."""
    import json

    from knowledge.core.paths import config_home

    path = config_home() / "keymap.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}
    if not isinstance(raw, dict):
        log.warning("ignoring %s: expected an object of binding id -> keys", path)
        return {}
    return {str(k): str(v) for k, v in raw.items() if isinstance(v, str)}


def run_app(args: argparse.Namespace, dashboard: DashboardStarter | None = None) -> NoReturn:
    """Run the chat app until it quits, then end the process (see `exit_now`); `dashboard`
    serves `/dashboard`."""
    from knowledge.core.paths import data_home
    from theus.config import load_model_settings
    from theus.service.interrupts import hand_over
    from theus.service.process import exit_now
    from theus.service.project import UsageError, project_root

    root = project_root(getattr(args, "path", "."))
    _log_to_file(data_home())
    session, messages = None, None
    pick = getattr(args, "resume", None) == ""  # `-r` with no id
    if getattr(args, "resume", None) or getattr(args, "continue_last", False):
        from theus.sessions import SessionNotFound, SessionStore

        store = SessionStore(root)
        try:
            session = store.open(args.resume) if args.resume else store.last()
        except SessionNotFound as exc:
            raise UsageError(str(exc)) from None
        if session is None:
            raise UsageError("no earlier session in this project to continue (drop -c)")
        messages = session.messages()
    app = TheusApp(
        root,
        load_model_settings(),
        resume=messages,
        session=session,
        pick_session=pick,
        first_request=" ".join(getattr(args, "request", None) or ()),
        end_process=exit_now,
        dashboard=dashboard,
    )
    hand_over()
    app.run()
    app._say_how_to_resume()  # quit by another way than action_quit (an error, a signal)
    # Everything durable was closed on unmount: only buffers are left to flush.
    exit_now(app.return_code or 0)


def _log_to_file(home: Path) -> None:
    """The screen belongs to the app: log lines go to a file, never to stderr."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(home / "tui.log", encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(PrintableFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
