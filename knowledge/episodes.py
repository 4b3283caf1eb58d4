"""Episodic memory: every compaction summary and end-of-session summary, kept twice.

Once as a readable Markdown file `episodes/<date>-<slug>.md` in the project's memory folder
(frontmatter: date, type, session, title, files; then the whole text), and once as an episode
node in the graph (text capped at 1,500 characters) with derived-from edges to the files and
symbols it touched, so a later session's recall finds "what did we do with the login?".

The files are the truth: `load` rebuilds the episode nodes from them at start (a fresh store
still has its history) and drops nodes whose file a person deleted.

The agent talks to this module through `EpisodeSink`: a compaction summary as text, and at
session end a `knowledge.core.runs.RunSummary` of what it saw happen.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from knowledge.core import atomic, keys
from knowledge.core.errors import TheusError
from knowledge.core.frontmatter import Problem, first_line, parse_frontmatter, render_frontmatter
from knowledge.core.frontmatter import shorten as _shorten
from knowledge.core.graph import Graph, Node
from knowledge.core.mentions import Mentions
from knowledge.core.paths import report_unwritable
from knowledge.core.redact import redact
from knowledge.core.runs import NOTE, RunSummary
from knowledge.core.settings import is_off
from knowledge.core.store import StoreError
from knowledge.index.project import Project

log = logging.getLogger(__name__)

EPISODE_TYPES = ("compaction", "session-end", "manual")
_KIND_ALIASES = {"session": "session-end", "session_end": "session-end", "end": "session-end"}
TEXT_CAP = 1500  # characters of an episode's text kept on its node; the file keeps it all
# What episodes of earlier versions began with: each said "no model" whatever happened.
LEGACY_NOTE = "Built without a model:"
_ID_RE = re.compile(r"^(?P<day>\d{4}-\d{2}-\d{2})-(?P<slug>[a-z0-9-]+)$")


@dataclass(slots=True)
class Episode:
    id: str  # the file's stem, `<YYYY-MM-DD>-<slug>`; the node key is `ep:<id>`
    date: str  # ISO-8601 with offset
    type: str
    session_id: str
    title: str
    files: list[str]
    text: str

    @property
    def key(self) -> str:
        match = _ID_RE.match(self.id)
        return keys.episode_key(match["day"], match["slug"]) if match else f"ep:{self.id}"

    @property
    def file_name(self) -> str:
        return f"{self.id}.md"

    def render(self) -> str:
        meta = {
            "date": self.date,
            "type": self.type,
            "session": self.session_id,
            "title": self.title,
            "files": self.files,
        }
        return render_frontmatter(meta) + "\n" + self.text.strip() + "\n"

    def node(self) -> Node:
        """The episode's node, redacted: `record` redacts what it writes, but an episode file
        may also be written by hand."""
        try:
            since: float | None = datetime.fromisoformat(self.date).timestamp()
        except ValueError:
            since = None
        text, title = redact(self.text), redact(self.title)
        return Node(
            key=self.key,
            kind="episode",
            label=title,
            summary=_shorten(_summary_line(text, title), 200),
            subkind=self.type,
            source="episode",
            valid_from=since,
            data={
                "text": text[:TEXT_CAP],
                "type": self.type,
                "date": self.date,
                "session": self.session_id,
                "files": list(self.files),
                "file": f"episodes/{self.file_name}",
            },
        )

    def to_json(self, full: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "key": self.key,
            "date": self.date,
            "type": self.type,
            "session": self.session_id,
            "title": self.title,
            "files": self.files,
        }
        if full:
            out["text"] = self.text
        return out


class EpisodeSink(Protocol):
    """What the agent calls. Both return None when episodes are off or could not be kept
    (fail open: the session goes on); neither raises for I/O trouble."""

    def record(
        self, kind: str, text: str, session_id: str | None, files: Sequence[str] = ()
    ) -> Episode | None: ...

    def record_run(self, run: RunSummary, session_id: str) -> Episode | None: ...


class EpisodeNotFound(TheusError, LookupError):
    pass


class AmbiguousEpisode(TheusError, LookupError):
    pass


@dataclass(slots=True)
class LoadReport:
    enabled: bool = True
    episodes: int = 0
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now().astimezone()


class EpisodeStore:
    """Episodes of one project. Implements `EpisodeSink`."""

    def __init__(self, project: Project, now: Callable[[], datetime] = _now) -> None:
        self.project = project
        self.dir = project.paths.episodes
        self.now = now
        self._loaded = False
        self.last_error: str | None = None  # the last write that failed, for `theus status`

    # -- writing ---------------------------------------------------------------------------
    def record(
        self,
        kind: str,
        text: str,
        session_id: str | None,
        files: Sequence[str] = (),
        title: str | None = None,
    ) -> Episode | None:
        """Keep a summary as an episode. `kind` is compaction, session-end (or session) or
        manual; `files` are repo-relative or absolute paths, or `path#Symbol`."""
        kind = _KIND_ALIASES.get(kind, kind)
        session_id = session_id or ""
        if kind not in EPISODE_TYPES:
            raise ValueError(f"episode type must be one of {', '.join(EPISODE_TYPES)}")
        if is_off("episodes"):
            log.info("episode not kept: THEUS_NO_EPISODES=1")
            return None
        text = redact(text.strip())  # an episode is persisted and injected later
        if not text:
            return None
        when = self.now().replace(microsecond=0)
        title = _shorten(redact(title or first_line(text)), 80) or f"{kind} {session_id}"
        episode = Episode(
            "", when.isoformat(), kind, session_id, title, _relative(self.project.root, files), text
        )
        try:
            self._write(episode, when.strftime("%Y-%m-%d"))
        except OSError as exc:
            self._failed(f"episode file not written: {exc}", quiet=report_unwritable(exc))
            return None
        if not self.project.graph_loaded:
            return self._save_alone(episode)
        with self.project.lock:
            if not self._loaded:  # a store rebuilt since start gets its history back first
                self.load()
            self._upsert(episode, Mentions(self.project.graph))
            try:
                self.project.save()
            except StoreError as exc:  # the node stays in the graph; the next save retries
                self._failed(str(exc))
                return episode
        self.last_error = None
        return episode

    def _save_alone(self, episode: Episode) -> Episode:
        """A one-shot process (`theus -p`) never loaded the graph, and loading all of it to
        save one node would cost more than the run (1 s on 38k nodes): the node is saved on its
        own; its edges come when a process that loads the graph reads the files (`load`: the
        app, `theus index`)."""
        alone = Graph()
        alone.upsert(episode.node())
        try:
            self.project.store.save(alone)
        except StoreError as exc:  # the file is the record: `load` brings it in later
            self._failed(str(exc))
            return episode
        self.last_error = None
        return episode

    def record_run(self, run: RunSummary, session_id: str) -> Episode | None:
        """The end-of-session episode, from what the agent saw happen. Nothing for a run that
        answered nothing; an episode identical to one already kept is not written again."""
        if not run.worth_keeping or is_off("episodes"):
            return None
        text = redact(run.render())
        for kept in self.list()[0]:
            if kept.type == "session-end" and kept.text.strip() == text.strip():
                return kept
        return self.record(
            "session-end", text, session_id, [*run.files_changed, *run.files_read], title=run.title
        )

    def _write(self, episode: Episode, day: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic.clean_orphans(self.dir)
        base = keys.slugify(episode.title, 48)
        with atomic.locked(self.dir / ".lock"):  # two sessions never take the same name
            slug, n = base, 1
            while (self.dir / f"{day}-{slug}.md").exists():
                n += 1
                slug = f"{base}-{n}"
            episode.id = f"{day}-{slug}"
            atomic.write_text(self.dir / episode.file_name, episode.render())

    def _upsert(self, episode: Episode, mentions: Mentions) -> bool:
        graph = self.project.graph
        node = episode.node()
        with graph.lock:
            old = graph.get(node.key)
            changed = old is None or old != node
            if changed:
                graph.upsert(node)
                graph.remove_out_edges(node.key, ("derived-from",))
            mentions.link(node.key, episode.text, episode.files)
        return changed

    def _failed(self, message: str, quiet: bool = False) -> None:
        """Record the failure for `theus status`; `quiet` when it was already told (a data
        folder that refuses every write is one warning, `paths.report_unwritable`)."""
        if not quiet:
            log.warning("episodes: %s", message)
        self.last_error = message

    def prune(self, dry_run: bool = False) -> list[Episode]:
        """Remove what earlier versions kept that is not true or not new: mechanical episodes
        that said "no model was available" whatever happened, and repeats of an episode
        (same type, same text; the oldest stays). Returns them, oldest first."""
        episodes, _ = self.list()
        seen: set[tuple[str, str]] = set()
        junk: list[Episode] = []
        for episode in reversed(episodes):  # oldest first: the first of a repeat stays
            text = episode.text.strip()
            if text.startswith(LEGACY_NOTE) or (episode.type, text) in seen:
                junk.append(episode)
            seen.add((episode.type, text))
        if junk and not dry_run:
            for episode in junk:
                (self.dir / episode.file_name).unlink(missing_ok=True)
            self.load()  # their nodes leave the graph
        return junk

    # -- reading ---------------------------------------------------------------------------
    def saved_in_step(self) -> bool:
        """Whether the saved graph holds these episode files already: the same ones, none
        written since its last save. Then `load` would change nothing, and a one-shot `theus
        index` need not read the whole graph to find that out."""
        store = self.project.store
        saved_at = float(store.meta().get("saved_at", "0") or 0)
        try:
            files = [p for p in self.dir.glob("*.md") if not atomic.is_temp_name(p.name)]
            if any(p.stat().st_mtime >= saved_at for p in files):
                return False
        except OSError:
            return False
        on_disk = {e.key for e in self.list()[0]}
        saved = {n.key for n in store.of_kind("episode") if n.source == "episode"}
        return on_disk == saved

    def load(self) -> LoadReport:
        """Make the graph's episode nodes match the episode files. Idempotent."""
        if is_off("episodes"):
            return LoadReport(enabled=False)
        atomic.clean_orphans(self.dir)  # a writer killed mid-write left its temp file
        episodes, problems = self.list()
        self._loaded = True
        report = LoadReport(episodes=len(episodes), problems=problems)
        with self.project.lock:
            graph = self.project.graph
            mentions = Mentions(graph)
            wanted = {e.key for e in episodes}
            with graph.lock:
                for node in list(graph.nodes("episode")):
                    if node.source == "episode" and node.key not in wanted:
                        graph.remove_node(node.key)
                        report.removed.append(node.key)
            for episode in episodes:
                if self._upsert(episode, mentions):
                    report.added.append(episode.key)
            if report.added or report.removed:
                try:
                    self.project.save()
                except StoreError as exc:
                    self._failed(str(exc))
        return report

    def list(self) -> tuple[list[Episode], list[Problem]]:
        """Episodes on disk, newest first, and the files that could not be read."""
        episodes: list[Episode] = []
        problems: list[Problem] = []
        try:
            paths = sorted(self.dir.glob("*.md"))
        except OSError:
            paths = []
        for path in paths:
            if atomic.is_temp_name(path.name):
                continue
            episode, bad = parse_episode(path)
            problems.extend(bad)
            if episode is not None:
                episodes.append(episode)
        episodes.sort(key=lambda e: (e.date, e.id), reverse=True)
        return episodes, problems

    def get(self, ident: str) -> Episode:
        """By id, key (`ep:…`), file name, unique id prefix, or position in `list` (1 = newest)."""
        episodes, _ = self.list()
        wanted = ident.removeprefix("ep:").removesuffix(".md")
        if wanted.isdigit() and 0 < int(wanted) <= len(episodes) and len(wanted) < 4:
            return episodes[int(wanted) - 1]
        exact = [e for e in episodes if e.id == wanted]
        found = exact or [e for e in episodes if e.id.startswith(wanted)]
        if not found:
            raise EpisodeNotFound(ident)
        if len(found) > 1:
            raise AmbiguousEpisode(f"{ident} matches {len(found)} episodes: give more of the id")
        return found[0]


def parse_episode(path: Path) -> tuple[Episode | None, list[Problem]]:
    name = f"episodes/{path.name}"
    match = _ID_RE.match(path.stem)
    if match is None:
        return None, [Problem(name, 1, "name is not <YYYY-MM-DD>-<slug>.md; skipped")]
    try:
        raw = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        return None, [Problem(name, 1, f"unreadable: {exc}")]
    meta, body, problems = parse_frontmatter(raw, name)
    if problems:
        return None, [*problems, Problem(name, 1, "malformed frontmatter; skipped")]
    kind = meta.get("type", "manual")
    if kind not in EPISODE_TYPES:
        return None, [
            Problem(
                name,
                _line_of(raw, "type"),
                f"type {kind!r} is not one of {', '.join(EPISODE_TYPES)}; skipped",
            )
        ]
    files = meta.get("files", [])
    text = body.strip()
    episode = Episode(
        id=path.stem,
        date=str(meta.get("date") or match["day"]),
        type=kind,
        session_id=str(meta.get("session", "")),
        title=str(meta.get("title") or _shorten(first_line(text), 80) or path.stem),
        files=files if isinstance(files, list) else [str(files)],
        text=text,
    )
    return episode, []


def _line_of(raw: str, name: str) -> int:
    for number, line in enumerate(raw.split("\n"), start=1):
        if line.startswith(f"{name}:"):
            return number
    return 1


def _summary_line(text: str, title: str) -> str:
    """The first line that says more than the title."""
    lines = [ln.strip().lstrip("#").strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln]
    for line in lines:
        if line.startswith((NOTE, LEGACY_NOTE)):
            continue
        if line != title and not title.startswith(line.rstrip("…")):
            return line
    return lines[0] if lines else ""


def _relative(root: Path, files: Iterable[str]) -> list[str]:
    """Repo-relative, de-duplicated paths; `path#Symbol` kept; outside paths kept as given."""
    out: list[str] = []
    for item in files:
        item = str(item).strip()
        if not item:
            continue
        path, sep, symbol = item.partition("#")
        candidate = Path(path)
        if candidate.is_absolute():
            try:
                path = candidate.resolve().relative_to(root).as_posix()
            except (ValueError, OSError):
                path = candidate.as_posix()
        path = path.removeprefix("./")
        item = f"{path}{sep}{symbol}"
        if item not in out:
            out.append(item)
    return out


# -- the mechanical end-of-session summary -------------------------------------------------
# -- status ----------------------------------------------------------------------------------
def status_section(project: Project, live: EpisodeStore | None = None) -> dict[str, Any]:
    """`live`: the store this process records with (its last failure is shown)."""
    store = live or EpisodeStore(project)
    if is_off("episodes"):
        return {
            "enabled": False,
            "reason": "episodes are off (THEUS_NO_EPISODES=1): nothing is recorded",
            "dir": str(store.dir),
        }
    episodes, problems = store.list()
    last = episodes[0] if episodes else None
    return {
        "enabled": True,
        "dir": str(store.dir),
        "episodes": len(episodes),
        "last": f"{last.date} {last.type}: {last.title}" if last else None,
        "warnings": [str(p) for p in problems],
        "last_error": store.last_error,
    }
