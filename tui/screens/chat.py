"""The conversation: requests, streamed replies, tool calls, injected context, approvals.

With no model configured the request box becomes a recall box: each request shows the ranked
results and the block that would be injected.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static, TextArea

from theus import protocol as ev
from theus.permissions import rules_for
from tui import attachments
from tui.app_handle import theus_app
from tui.messages import AgentEvent, InjectedTokens, RecallDone, TextBatch
from tui.registry import Command
from tui.screens.approval import ApprovalScreen
from tui.slash import REGISTRY
from tui.widgets.busy import BusyIndicator
from tui.widgets.chat_items import (
    AssistantReply,
    InjectionView,
    Notice,
    RecallView,
    ToolCallView,
    UserRequest,
    replayed,
)
from tui.widgets.prompt import PromptInput
from tui.widgets.status_bar import StatusBar
from tui.widgets.suggestions import Suggestions, completing, file_options, slash_options

MAX_ITEMS = 400  # older items are pruned past this many, keeping the log light

NO_MODEL_NOTICE = (
    "No model configured — the box below searches the project's memory: you see the ranked "
    "results and the block that would be injected. To chat, set THEUS_BASE_URL, THEUS_API_KEY "
    "and THEUS_MODEL, or run `theus login`, then restart theus."
)


class ChatScreen(Screen[None]):
    CSS_PATH = "chat.tcss"
    HELP = """\
## Chat

Type a request and press Enter. Tool calls and the injected context appear as one-line
entries: click or press Enter on one to expand it. **Escape** or **Ctrl+C** stops the running
turn; a second **Ctrl+C** within 2 seconds quits. `/resume` picks an earlier session to go on
with; approvals offer "always" for this session or this project (`/permissions` lists them).
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "cancel_turn",
            "Stop",
            id="chat.cancel",
            tooltip="Stop the running turn (the conversation is kept)",
        ),
        *REGISTRY.bindings("chat"),
    ]
    log_view = getters.query_one("#log", VerticalScroll)

    def __init__(self) -> None:
        super().__init__()
        self.agent: Any = None
        self._reply: AssistantReply | None = None
        self._tools: dict[str, ToolCallView] = {}
        self._open_batch: list[str] | None = None

    def compose(self) -> ComposeResult:
        if theus_app(self).model_settings is None:
            yield Static(NO_MODEL_NOTICE, id="no-model", markup=False)
        yield VerticalScroll(id="log")
        yield BusyIndicator()
        yield Suggestions()
        yield PromptInput(id="prompt")
        yield StatusBar()
        yield Footer()

    async def on_mount(self) -> None:
        self.log_view.anchor()
        prompt = self.query_one(PromptInput)
        prompt.suggestions = self.query_one(Suggestions)
        prompt.focus()
        app = theus_app(self)
        app.chat = self
        if app.resume_session is not None:
            await self.show_history(app.resume_session.id, app.resume or [])
        if app.pick_session:
            app.pick_session = False
            self.pick_session()
        elif app.first_request:  # `theus "where are the tests"`: sent as if typed
            prompt.post_message(PromptInput.Submitted(prompt, app.first_request))
            app.first_request = ""

    async def show_history(self, session_id: str, messages: list[Any]) -> None:
        """A resumed conversation on screen as it was, then a line saying which it is."""
        shown = replayed(messages)[-MAX_ITEMS:]
        if shown:
            await self.log_view.mount_all(shown)
        await self.add(Notice(f"resumed session {session_id} ({len(messages)} messages)"))

    async def add(self, widget: Widget) -> None:
        log = self.log_view
        await log.mount(widget)
        extra = len(log.children) - MAX_ITEMS
        if extra > 0:
            await log.remove_children(list(log.children)[:extra])
        if isinstance(widget, RecallView):
            # Its top (the ranked hits) in view, not its end: a tall block under them would
            # otherwise push the hits out of a 40-row screen.
            log.call_after_refresh(log.scroll_to_widget, widget, top=True, animate=False)

    def add_from_thread(self, widget: Widget) -> None:
        """`add` from a thread worker; returns once the widget is mounted."""
        # Typed as maybe-awaitable: mypy cannot solve call_from_thread's `T | Awaitable[T]`
        # callback for a coroutine function.
        add: Callable[[Widget], Awaitable[None] | None] = self.add
        self.app.call_from_thread(add, widget)

    # -- requests -----------------------------------------------------------------------------
    @on(PromptInput.Submitted)
    async def submitted(self, event: PromptInput.Submitted) -> None:
        self.log_view.scroll_end(animate=False)  # back to the newest, anchored again
        command = REGISTRY.parse(event.text)
        if command is not None:
            await self.run_slash(*command)
        elif theus_app(self).model_settings is None:
            self.recall(event.text)
        elif self.busy:
            # A second request would cancel the running turn (the worker is exclusive).
            event.prompt.load_text(event.text)
            await self.add(Notice("a turn is running: wait for it, or press Escape to stop it"))
        else:
            await self.add(UserRequest(event.text))
            self.run_turn(event.text)

    @property
    def busy(self) -> bool:
        return any(w.group == "agent" and not w.is_finished for w in self.workers)

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_turn(self, text: str) -> None:
        busy = self.query_one(BusyIndicator)
        busy.start()
        started = False
        try:
            request = text
            if attachments.mentions(text):
                request, attached = await asyncio.to_thread(
                    attachments.expand, theus_app(self).engine.root, text
                )
                for item in attached:
                    await self.add(Notice(item.describe(), error=bool(item.error)))
            agent = self._agent()
            await theus_app(self).mcp.ready(agent)  # the MCP tools that are up by now
            started = True
            await agent.run_turn(request)
        except asyncio.CancelledError:
            if not started:  # else the agent's own "cancelled" end says it, once
                self.post_message(AgentEvent(ev.Error("stopped", fatal=True)))
            raise
        finally:
            busy.stop()

    def _agent(self) -> Any:
        if self.agent is None:
            self.agent = theus_app(self).make_agent(self._sink, self._approve)
        return self.agent

    def _sink(self, event: ev.Event) -> None:
        """Called by the agent on the event loop. Deltas join the batch not yet shown; any
        other event closes it, so the order of text and tool calls is kept."""
        if isinstance(event, ev.TextDelta):
            if self._open_batch is None:
                self._open_batch = []
                self.post_message(TextBatch(self._open_batch))
            self._open_batch.append(event.text)
            return
        self._open_batch = None
        self.post_message(AgentEvent(event))

    async def on_text_batch(self, message: TextBatch) -> None:
        if message.pieces is self._open_batch:
            self._open_batch = None
        text = "".join(message.pieces)
        self.query_one(BusyIndicator).streamed(text)
        if self._reply is None:
            self._reply = AssistantReply()
            await self.add(self._reply)
        await self._reply.feed(text)

    async def _approve(self, request: ev.ApprovalRequest) -> bool:
        """Runs inside the agent worker, so it may wait on the modal. A standing rule
        ("always") answers without asking."""
        permissions = theus_app(self).permissions
        standing = await asyncio.to_thread(permissions.allowing, request)
        if standing:
            rules = "; ".join(f"{scope} rule: {rule.describe()}" for scope, rule in standing)
            self.post_message(AgentEvent(Notice(f"allowed ({rules}): {request.summary}")))
            return True
        answer = await self.app.push_screen_wait(ApprovalScreen(request))
        if answer == "session" or answer == "project":  # `in` would not narrow the type
            added = rules_for(request)
            await asyncio.to_thread(permissions.allow, added, answer)
            note = f"approved, and from now on in this {answer}: " + "; ".join(
                rule.describe() for rule in added
            )
        else:
            note = ("approved: " if answer == "yes" else "refused: ") + request.summary
        self.post_message(AgentEvent(Notice(note)))
        return answer != "no"

    # -- completions ----------------------------------------------------------------------------
    @on(TextArea.Changed, "#prompt")
    def prompt_changed(self) -> None:
        """Suggest slash commands after `/` and project files after `@`, as you type."""
        prompt = self.query_one(PromptInput)
        box = self.query_one(Suggestions)
        target = completing(prompt.text, *prompt.cursor_location)
        if target is None:
            box.hide()
        elif target.kind == "slash":
            box.show(target, slash_options(target.query))
        else:
            self.suggest_files(target)

    @work(thread=True, exclusive=True, group="complete", exit_on_error=False)
    def suggest_files(self, target: Any) -> None:
        engine = theus_app(self).engine
        if not engine.loaded:  # the graph is still loading: no files to offer yet
            return
        rows = file_options(target.query, engine.file_paths())
        self.app.call_from_thread(self._show_files, target, rows)

    def _show_files(self, target: Any, rows: list[tuple[str, str]]) -> None:
        prompt = self.query_one(PromptInput)
        if completing(prompt.text, *prompt.cursor_location) == target:  # still typing it
            self.query_one(Suggestions).show(target, rows)

    @work(thread=True, exclusive=True, group="recall", exit_on_error=False)
    def recall(self, query: str) -> None:
        engine = theus_app(self).engine
        if not engine.loaded:
            self.add_from_thread(Notice("the project's index is still loading; results follow"))
        result = engine.recall(query)
        self.post_message(RecallDone(result.recall.took_ms))
        self.add_from_thread(RecallView(query, result))

    # -- agent events ---------------------------------------------------------------------------
    async def on_agent_event(self, message: AgentEvent) -> None:
        event = message.event
        if isinstance(event, Widget):  # a notice queued behind the events before it
            await self.add(event)
        elif isinstance(event, ev.AssistantMessage | ev.TurnFinished):
            await self._end_reply()
            if isinstance(event, ev.TurnFinished):
                if self.agent is not None:
                    theus_app(self).show_usage(self.agent.usage)
                if event.stop == "cancelled":
                    await self.add(Notice("stopped: the request was cancelled"))
                elif event.stop != "error":
                    if event.stop != "end":
                        await self.add(Notice(f"turn ended: {event.stop}"))
                    elif not event.text.strip():
                        await self.add(Notice("the model answered with an empty reply"))
        elif isinstance(event, ev.InjectionInfo):
            self.post_message(InjectedTokens(event.tokens if event.block else 0, event.took_ms))
            await self.add(
                InjectionView(
                    event.tokens,
                    event.took_ms,
                    event.block,
                    event.reason,
                    event.dropped,
                    event.examples,
                )
            )
        elif isinstance(event, ev.ToolCallStarted):
            await self._end_reply()
            view = ToolCallView(event.id, event.name, event.arguments)
            self._tools[event.id] = view
            await self.add(view)
        elif isinstance(event, ev.ToolCallFinished):
            call = self._tools.pop(event.id, None)
            if call is not None:
                call.finished(event.result, event.is_error, event.took_ms)
        elif isinstance(event, ev.ApprovalRequest):  # only with the agent's default approver
            self._answer(event)
        else:
            text = _describe(event)
            if text:
                await self.add(Notice(text, error=isinstance(event, ev.Error)))

    @work(group="approval", exit_on_error=False)
    async def _answer(self, request: ev.ApprovalRequest) -> None:
        answer = await self._approve(request)
        if request.future is not None and not request.future.done():
            request.future.set_result(answer)

    async def _end_reply(self) -> None:
        if self._reply is not None:
            reply, self._reply = self._reply, None
            await reply.end_stream()

    # -- actions and slash commands -------------------------------------------------------------
    def action_cancel_turn(self) -> None:
        self.workers.cancel_group(self, "agent")

    def interrupt(self) -> bool:
        """Ctrl+C: stop the running turn (refusing an approval it waits on); False when no
        turn was running."""
        if not self.busy:
            return False
        modal: Screen[Any] = self.app.screen  # as `Screen[object]` it would not narrow
        if isinstance(modal, ApprovalScreen):
            modal.dismiss("no")
        self.action_cancel_turn()
        return True

    async def run_slash(self, name: str, arg: str) -> None:
        """Run `/name` typed in the request box; an unknown name gets the commands it may mean."""
        command = REGISTRY.find(name)
        if command is None:
            await self.add(
                Notice(
                    f"unknown command /{name}; try "
                    + ", ".join("/" + c for c in REGISTRY.suggest(name)),
                    error=True,
                )
            )
        else:
            await self.run_command(command, arg)

    async def run_command(self, command: Command, arg: str) -> None:
        """Run `command` (typed, or from its key or the palette) unless a turn runs and the
        command waits for the turn to end."""
        if self.busy and not command.while_busy:
            await self.add(Notice(f"a turn is running: stop it (Escape) before /{command.name}"))
        else:
            await command.run(self, arg)

    async def end_session(self) -> None:
        """Stop the turn, end the session (its episode) and clear the screen and its figures."""
        app = theus_app(self)
        self.workers.cancel_group(self, "agent")
        app.end_agent(self.agent)
        self.agent = None
        self._reply = None
        self._tools.clear()
        app.permissions.forget_session()
        app.reset_usage()
        await self.log_view.remove_children()

    @work(group="init", exclusive=True, exit_on_error=False)
    async def init_agents_file(self) -> None:
        """`/init`: an AGENTS.md drafted from the index, shown as a new file to approve."""
        import difflib

        from knowledge.core import atomic
        from knowledge.memory.agents_draft import FILE_NAME, draft_from

        engine = theus_app(self).engine
        target = engine.root / FILE_NAME
        if target.exists():
            await self.add(
                Notice(
                    f"{FILE_NAME} already exists: nothing written (theus init "
                    "--print shows a draft to compare)"
                )
            )
            return
        text = await asyncio.to_thread(lambda: draft_from(engine.load()))
        diff = "".join(
            difflib.unified_diff(
                [], text.splitlines(keepends=True), fromfile="/dev/null", tofile=f"b/{FILE_NAME}"
            )
        )
        request = ev.ApprovalRequest(
            "edit",
            f"write {FILE_NAME} (drafted from the index)",
            diff,
            path=FILE_NAME,
            protected="instructions every agent follows",
        )
        if await self.app.push_screen_wait(ApprovalScreen(request)) == "no":
            await self.add(Notice(f"{FILE_NAME} not written"))
            return
        try:
            await asyncio.to_thread(atomic.write_text, target, text)
        except OSError as exc:
            await self.add(Notice(f"cannot write {target}: {exc.strerror or exc}", error=True))
            return
        await self.add(Notice(f"wrote {FILE_NAME}: the next conversation follows it"))

    @work(group="session-picker", exit_on_error=False)
    async def pick_session(self) -> None:
        from tui.screens.session_picker import SessionPicker

        chosen = await self.app.push_screen_wait(SessionPicker(theus_app(self).engine.root))
        if chosen:
            self.resume(chosen)

    @work(group="resume", exit_on_error=False)
    async def resume(self, session_id: str) -> None:
        """Go on with an earlier session (a unique prefix of its id will do): its
        conversation on screen, and the next request sends it to the model. No turn runs
        meanwhile: `/resume` is declared to wait for it, and the picker is modal."""
        from theus.sessions import SessionNotFound, SessionStore

        app = theus_app(self)
        try:
            session = await asyncio.to_thread(SessionStore(app.engine.root).open, session_id)
        except SessionNotFound as exc:
            await self.add(Notice(str(exc), error=True))
            return
        messages = await asyncio.to_thread(session.messages)
        await self.end_session()
        app.resume_session, app.resume = session, messages
        await self.show_history(session.id, messages)

    def status_text(self) -> str:
        """`/status`: what `theus status` shows, with this app's model and session."""
        from knowledge.memory.status import gather
        from theus.service.status import sections

        app = theus_app(self)
        settings = app.model_settings
        lines = [
            f"model: {settings.model} ({settings.source})"
            if settings
            else "model: none configured (see /help)",
            f"session: {self.agent.session.id}"
            if self.agent and self.agent.session
            else "session: none yet (the first request starts one)",
            f"project: {app.engine.root}",
        ]
        report = gather(app.engine.load(), app.engine.memory)
        for section, rows in sections(report).items():
            lines.append(f"{section}: " + "; ".join(f"{k} {v}" for k, v in rows))
        return "\n".join(lines)

    def undo_text(self) -> str:
        """`/undo`: the files the last turn's edits and writes changed, put back."""
        from theus.tools.files import put_back

        if self.agent is None or self.agent.checkpoints is None:
            return "nothing to undo in this conversation"
        jail = self.agent.context.jail
        try:
            files = self.agent.checkpoints.undo(lambda rel, data: put_back(jail, rel, data))
        except OSError as exc:
            return f"undo failed part way: {exc} (/diff shows where the files are)"
        if not files:
            return "nothing to undo: no edit or write of this conversation is left"
        return (
            "put back as before the last turn that changed files: "
            + ", ".join(files)
            + " (changes made by shell commands are not undone)"
        )

    def diff_text(self) -> str:
        """`/diff`: what this conversation's edits and writes changed, file by file."""
        from theus.tools.files import current_bytes

        if self.agent is None or self.agent.checkpoints is None:
            return "no changes in this conversation"
        jail = self.agent.context.jail
        return (
            self.agent.checkpoints.diff(lambda rel: current_bytes(jail, rel))
            or "no changes in this conversation (by the edit and write tools)"
        )

    def cost_text(self) -> str:
        """`/cost`: the conversation's tokens, as the status bar counts them, and a price
        where the price table has the model."""
        from theus.pricing import cost_usd

        if self.agent is None:
            return "no tokens spent yet in this conversation"
        usage = self.agent.usage
        settings = theus_app(self).model_settings
        cost = cost_usd(
            settings.model if settings else "", usage.prompt_tokens, usage.completion_tokens
        )
        return (
            f"{usage.model_calls} model calls: {usage.prompt_tokens:,} tokens sent "
            f"({usage.injected_tokens:,} of them recalled context), "
            f"{usage.completion_tokens:,} received; fact extraction "
            f"{usage.extraction_tokens:,}; "
            + (
                f"${cost:.4f}"
                if cost is not None
                else "no price for this model (THEUS_PRICES or prices.json)"
            )
            + "\nsent, by part: "
            + " · ".join(
                f"{part.replace('_', ' ')} {tokens:,}"
                for part, tokens in usage.ledger.as_dict().items()
            )
            + f"\nbeside them, the memory's extraction calls: {usage.extraction_tokens:,}"
        )

    def permissions_text(self, arg: str) -> str:
        """`/permissions`: the standing approvals; `/permissions revoke N` drops one."""
        permissions = theus_app(self).permissions
        verb, _, number = arg.partition(" ")
        if verb in ("revoke", "rm", "remove"):
            try:
                scope, rule = permissions.revoke(int(number))
            except (ValueError, IndexError):
                return f"no rule {number or '?'}: see the numbers `/permissions` lists"
            return f"revoked ({scope}): {rule.describe()}"
        if verb:
            return "usage: /permissions, or /permissions revoke N"
        listed = permissions.listed()
        warnings = "".join(f"\nwarning: {w}" for w in permissions.warnings)
        if not listed:
            return (
                "no standing approvals: answer an approval with a (this session) or p "
                "(this project) to add one" + warnings
            )
        lines = [
            f"{i:>2}. {scope:<7} {rule.describe()}" for i, (scope, rule) in enumerate(listed, 1)
        ]
        return (
            "standing approvals (`/permissions revoke N` drops one):\n"
            + "\n".join(lines)
            + f"\nproject rules are kept in {permissions.path}"
            + warnings
        )

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def compact(self) -> None:
        agent = self.agent
        if agent is None or len(agent.messages) < 3:
            await self.add(Notice("nothing to compact yet"))
            return
        if not await agent.compact():
            await self.add(Notice("nothing to compact: the last request is kept verbatim"))

    @work(thread=True, group="mcp", exit_on_error=False)
    def show_mcp(self, arg: str) -> None:
        servers = theus_app(self).mcp
        text = servers.trust() if arg == "trust" else servers.listing()
        self.add_from_thread(Notice(text))

    @work(thread=True, group="dashboard", exit_on_error=False)
    def open_dashboard(self) -> None:
        url = theus_app(self).dashboard_url()
        self.add_from_thread(Notice(f"dashboard (this session only): {url}"))

    @work(thread=True, group="sessions", exit_on_error=False)
    def list_sessions(self) -> None:
        import time

        from theus.sessions import SessionStore

        infos = SessionStore(theus_app(self).engine.root).list()
        lines = [
            f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(i.updated))}  {i.id}  "
            f"{i.messages} messages  {i.title}"
            for i in infos[:30]
        ]
        text = (
            "sessions (resume with `/resume ID` or `theus -r ID`):\n" + "\n".join(lines)
            if lines
            else "no earlier sessions in this project"
        )
        self.add_from_thread(Notice(text))


def _describe(event: Any) -> str:
    if isinstance(event, ev.Error):
        return ("error: " if event.fatal else "warning: ") + event.message
    if isinstance(event, ev.Compacted):
        return (
            f"compacted {event.messages_replaced} messages: {event.tokens_before} → "
            f"{event.tokens_after} tokens"
        )
    if isinstance(event, ev.MicrocompactCleared):
        return f"cleared {event.cleared} old tool results ({event.tokens_saved} tokens)"
    if isinstance(event, ev.SubagentStarted):
        return f"subagent {event.id} started: {event.description}"
    if isinstance(event, ev.SubagentFinished):
        return f"subagent {event.id} finished" + (" with an error" if event.is_error else "")
    return ""
