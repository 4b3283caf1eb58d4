"""Episodes: a Markdown file and a graph node per compaction / session end, found by recall."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from knowledge.core import keys
from knowledge.core.runs import NOTE, RunSummary
from knowledge.episodes import (
    TEXT_CAP,
    AmbiguousEpisode,
    EpisodeNotFound,
    EpisodeSink,
    EpisodeStore,
    parse_episode,
    status_section,
)
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
from tests.conftest import configure, indexed_project, present, write_tree

COMPACTION = """# Login redirect fixed

The redirect after login sent users to /home instead of where they came from.
`redirect_after_login` in `src/login.py` now keeps the `next` parameter; `Cart.total` untouched.
Open question: should logout also keep `next`?
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    proj = indexed_project(
        tmp_path / "repo",
        {
            "src/cart.py": "class Cart:\n    def total(self):\n        return 0\n",
            "src/login.py": "def redirect_after_login(user):\n    return '/home'\n",
            "src/billing.py": "def invoice(order):\n    return order\n",
        },
    )
    yield proj
    proj.close()


class Clock:
    """Deterministic time for names and ordering."""

    def __init__(self) -> None:
        self.t = datetime(2026, 3, 14, 9, 30, tzinfo=timezone(timedelta(hours=1)))

    def __call__(self) -> datetime:
        self.t += timedelta(minutes=5)
        return self.t


def test_compaction_summary_becomes_a_file_and_a_node(project: Project) -> None:
    store = EpisodeStore(project, Clock())
    sink: EpisodeSink = store
    episode = sink.record(
        "compaction", COMPACTION, "s-1", [str(project.root / "src/login.py"), "src/login.py"]
    )
    assert episode is not None and episode.id == "2026-03-14-login-redirect-fixed"
    path = project.paths.episodes / "2026-03-14-login-redirect-fixed.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(
        "---\ndate: 2026-03-14T09:35:00+01:00\ntype: compaction\n"
        "session: s-1\ntitle: Login redirect fixed\n"
        'files: ["src/login.py"]\n---\n'
    )
    assert COMPACTION.strip() in text
    node = present(project.graph.get(keys.episode_key("2026-03-14", "login-redirect-fixed")))
    assert node.kind == "episode" and node.source == "episode"
    assert node.label == "Login redirect fixed"
    assert node.summary.startswith("The redirect after login sent users")
    assert node.data["text"] == COMPACTION.strip() and node.data["type"] == "compaction"
    targets = {e.dst for e in project.graph.out_edges(node.key, "derived-from")}
    assert targets == {
        keys.file_key("src/login.py"),
        keys.symbol_key("src/login.py", "redirect_after_login"),
        keys.symbol_key("src/cart.py", "Cart.total"),
    }
    # Saved: a new process sees it.
    project.close()
    again = Project(project.root)
    assert again.graph.get(node.key) is not None
    again.close()


def test_session_end_summary_and_long_text_cap(project: Project) -> None:
    store = EpisodeStore(project, Clock())
    long = "Session wrap-up: billing invoices\n" + "details " * 400
    episode = present(store.record("session-end", long, "s-2", ["src/billing.py#invoice"]))
    node = present(project.graph.get(episode.key))
    assert len(node.data["text"]) == TEXT_CAP
    assert (project.paths.episodes / episode.file_name).read_text().count("details") == 400
    assert {e.dst for e in project.graph.out_edges(episode.key)} == {
        keys.symbol_key("src/billing.py", "invoice")
    }
    assert store.get("1").type == "session-end"


def test_a_run_summary_becomes_one_episode_of_what_happened(project: Project) -> None:
    run = RunSummary(
        requests=("why does login send me home?", "fix it please"),
        answer="Fixed: the redirect keeps `next`.",
        outcome="answered",
        files_changed=("src/login.py",),
        files_read=("src/login.py", "src/urls.py"),
        commands=("pytest -q tests",),
        not_done=("write ../outside.txt: refused",),
    )
    store = EpisodeStore(project, Clock())
    episode = store.record_run(run, "s-3")
    assert episode is not None and episode.type == "session-end"
    assert episode.title == "Session: why does login send me home?"
    assert episode.files == ["src/login.py", "src/urls.py"]
    text = (project.paths.episodes / episode.file_name).read_text()
    assert text.count(NOTE) == 1 and "- why does login send me home?\n- fix it please" in text
    assert "Files changed: `src/login.py`" in text and "Files read: `src/urls.py`" in text
    assert "- `pytest -q tests`" in text and "- write ../outside.txt: refused" in text
    assert "Outcome: answered" in text and "Last answer: Fixed" in text
    assert keys.file_key("src/login.py") in {
        e.dst for e in project.graph.out_edges(episode.key, "derived-from")
    }
    assert store.record_run(run, "s-4") == episode  # identical: merged, not repeated
    assert len(list(project.paths.episodes.glob("*.md"))) == 1
    silent = RunSummary(requests=("hello",), answer="", outcome="failed")
    assert store.record_run(silent, "s-5") is None  # answered nothing: no episode


@pytest.mark.parametrize(
    ("requests", "done", "kept"),
    [
        (("where is the login handled?",), {"files_read": ("src/login.py",)}, False),
        (("hello",), {}, False),
        (("rename it",), {"not_done": ("edit src/login.py: refused",)}, False),
        (("rename it",), {"files_changed": ("src/login.py",)}, True),
        (("run the tests",), {"commands": ("pytest -q",)}, True),
        (("remember that we deploy on Fridays",), {}, True),
        (("ok", "Recuérdalo para la próxima vez"), {}, True),
        (("don't forget: staging uses port 8443",), {}, True),
    ],
)
def test_only_a_run_that_changed_ran_or_was_asked_to_remember_is_an_episode(
    project: Project, requests: tuple[str, ...], done: dict[str, tuple[str, ...]], kept: bool
) -> None:
    run = RunSummary(requests, "answered it", "answered", **done)
    assert run.worth_keeping is kept
    assert (EpisodeStore(project, Clock()).record_run(run, "s-1") is not None) is kept
    assert len(list(project.paths.episodes.glob("*.md"))) == int(kept)


def test_recall_finds_an_episode_by_its_subject(project: Project) -> None:
    store = EpisodeStore(project, Clock())
    login = present(store.record("compaction", COMPACTION, "s-1", ["src/login.py"]))
    store.record("session-end", "Invoices now round to cents in `src/billing.py`.", "s-2")
    store.record("manual", "Renamed the cart helpers; nothing else changed.", "s-3")
    hits = Recaller(project.graph, project.root).recall("what did we do with the login?").hits
    episodes = [h.key for h in hits if h.kind == "episode"]
    assert episodes == [login.key]  # the billing and cart episodes are not about the login
    assert hits[:3] and login.key in [h.key for h in hits[:3]]
    assert next(h for h in hits if h.key == login.key).layer == "HOT"


def test_load_rebuilds_episodes_into_a_fresh_store_idempotently(project: Project) -> None:
    store = EpisodeStore(project, Clock())
    first = present(store.record("compaction", COMPACTION, "s-1", ["src/login.py"]))
    # same title, same day: new name
    second = present(store.record("compaction", COMPACTION, "s-1"))
    assert second.id == first.id + "-2"
    root = project.root
    project.close()
    project.paths.store.unlink()
    fresh = Project(root)
    try:
        fresh.index()
        loaded = EpisodeStore(fresh).load()
        assert sorted(loaded.added) == sorted([first.key, second.key])
        counts = fresh.counts()
        for _ in range(10):
            assert EpisodeStore(fresh).load().added == []
        assert fresh.counts() == counts and not fresh.unsaved
        assert keys.file_key("src/login.py") in {e.dst for e in fresh.graph.out_edges(first.key)}
        (fresh.paths.episodes / second.file_name).unlink()
        assert EpisodeStore(fresh).load().removed == [second.key]
        assert fresh.graph.get(second.key) is None
    finally:
        fresh.close()


def test_malformed_episode_files_are_reported_and_skipped(project: Project) -> None:
    store = EpisodeStore(project, Clock())
    good = present(store.record("manual", "A good one", "s"))
    write_tree(
        project.paths.episodes,
        {
            "2026-01-01-unclosed.md": "---\ndate: 2026-01-01\ntype: manual\n",
            "2026-01-02-bad-type.md": "---\ndate: 2026-01-02\ntype: nap\n---\nzzz\n",
            "notes.md": "not an episode name\n",
            "2026-01-03-hand-written.md": "No frontmatter at all, written by a person.\n",
        },
    )
    episodes, problems = store.list()
    assert [e.id for e in episodes] == [good.id, "2026-01-03-hand-written"]
    assert [str(p) for p in problems] == [
        "episodes/2026-01-01-unclosed.md:1: frontmatter opened here is never closed",
        "episodes/2026-01-01-unclosed.md:1: malformed frontmatter; skipped",
        "episodes/2026-01-02-bad-type.md:3: type 'nap' is not one of compaction, session-end, "
        "manual; skipped",
        "episodes/notes.md:1: name is not <YYYY-MM-DD>-<slug>.md; skipped",
    ]
    report = store.load()
    assert len(report.problems) == 4 and report.episodes == 2
    assert status_section(project)["warnings"][0].startswith("episodes/2026-01-01-unclosed.md:1")


def test_get_by_id_prefix_and_errors(project: Project) -> None:
    store = EpisodeStore(project, Clock())
    a = present(store.record("manual", "Alpha work", "s"))
    store.record("manual", "Alpha review", "s")
    assert present(store.get(a.key)).id == a.id and present(store.get(a.file_name)).id == a.id
    assert present(store.get("2026-03-14-alpha-w")).id == a.id
    with pytest.raises(AmbiguousEpisode):
        store.get("2026-03-14-alpha")
    with pytest.raises(EpisodeNotFound):
        store.get("nothing")


def test_kill_switch_stops_all_episode_writing(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_episodes=True)
    store = EpisodeStore(project)
    assert store.record("compaction", COMPACTION, "s-1") is None
    kept = RunSummary(("fix it",), "fixed", "answered", files_changed=("src/login.py",))
    assert kept.worth_keeping
    assert store.record_run(kept, "s-2") is None
    assert not project.paths.episodes.exists()
    assert project.counts().get("episode", 0) == 0
    status = status_section(project)
    assert status["enabled"] is False and "THEUS_NO_EPISODES" in status["reason"]
    assert store.load().enabled is False


def test_unwritable_folder_fails_open(project: Project) -> None:
    project.paths.memory.mkdir(parents=True)
    project.paths.episodes.write_text("a file where the folder should be")
    store = EpisodeStore(project)
    assert store.record("compaction", COMPACTION, "s-1") is None
    assert "episode file not written" in status_section(project, store)["last_error"]
    assert status_section(project)["last_error"] is None  # another process knows nothing


def test_parse_round_trip_of_awkward_values(tmp_path: Path, project: Project) -> None:
    store = EpisodeStore(project, Clock())
    title = 'Fix: "quotes", [brackets] & # hashes'
    episode = present(
        store.record("manual", "body", 'id: with "quotes"', ["a b.py", "src/x.py#Y"], title=title)
    )
    parsed, problems = parse_episode(project.paths.episodes / episode.file_name)
    assert problems == [] and parsed is not None
    assert (parsed.title, parsed.session_id, parsed.files) == (
        title,
        'id: with "quotes"',
        ["a b.py", "src/x.py#Y"],
    )


def test_the_agent_port_takes_its_spelling_of_the_type(project: Project) -> None:
    sink = EpisodeStore(Project(project.root))
    episode = sink.record("session", "Requests: fix login | Outcome: done", None, ["src/login.py"])
    assert episode is not None and episode.type == "session-end" and episode.session_id == ""
    sink.project.close()
    project.close()
    again = Project(project.root)
    assert present(again.graph.get(episode.key)).label == "Requests: fix login | Outcome: done"
    again.close()


def test_theus_index_links_new_episodes_and_reads_no_graph_when_none_changed(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from entrypoint.cli import main
    from knowledge.core.graph import Graph
    from knowledge.core.store import Store

    root = project.root
    first = present(EpisodeStore(project, Clock()).record("compaction", COMPACTION, "s-1"))
    project.close()
    # What another process can leave: an episode file whose node the store does not hold.
    folder = project.paths.episodes
    copy = folder / f"{first.id}-2.md"
    copy.write_bytes((folder / first.file_name).read_bytes())
    episode = present(parse_episode(copy)[0])

    def saved_episodes() -> set[str]:
        reopened = Project(root)
        try:
            return {n.key for n in reopened.store.of_kind("episode")}
        finally:
            reopened.close()

    reads: list[str] = []
    load_graph = Store.load_graph

    def counted(store: Store) -> Graph:
        reads.append("graph")
        return load_graph(store)

    monkeypatch.setattr(Store, "load_graph", counted)
    assert main(["index", "--no-embed", "--path", str(root)]) == 0
    assert saved_episodes() == {first.key, episode.key} and reads
    reads.clear()
    assert main(["index", "--no-embed", "--path", str(root)]) == 0
    assert reads == [] and saved_episodes() == {first.key, episode.key}
    (folder / episode.file_name).unlink()
    assert main(["index", "--no-embed", "--path", str(root)]) == 0
    assert saved_episodes() == {first.key}
