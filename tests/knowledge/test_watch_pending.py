"""The watcher's bookkeeping with an explicit clock: debounce, max wait, storm threshold."""

from __future__ import annotations

from knowledge.watch.pending import Pending


def test_a_file_is_due_400_ms_after_its_last_event() -> None:
    pending = Pending()
    for i in range(10):  # saved every 50 ms
        pending.add({"a.py"}, i * 0.05)
    assert pending.due(0.45 + 0.39) == []
    assert pending.next_deadline() == 0.45 + 0.4
    assert pending.due(0.45 + 0.4) == ["a.py"]
    assert pending.idle


def test_a_file_that_never_goes_quiet_is_handled_after_the_max_wait() -> None:
    pending = Pending()
    t = 0.0
    while t < 2.0:
        pending.add({"log.py"}, t)
        t += 0.1
    assert pending.due(2.0) == ["log.py"]


def test_more_than_40_files_within_2_s_is_a_storm() -> None:
    pending = Pending()
    pending.add({f"f{i}.py" for i in range(20)}, 0.0)
    pending.add({f"f{i}.py" for i in range(20, 40)}, 1.0)
    assert not pending.storm and len(pending.files) == 40
    pending.add({"f40.py"}, 1.5)
    assert pending.storm and pending.files == {}
    pending.add({"late.py"}, 1.8)  # dropped: the rescan will see it on disk
    assert not pending.storm_ready(2.7) and pending.storm_ready(2.81)  # a quiet second
    pending.rescan_started()
    assert pending.idle


def test_files_spread_over_more_than_2_s_are_no_storm() -> None:
    pending = Pending()
    for i in range(100):
        pending.add({f"f{i}.py"}, i * 0.1)  # 20 files per 2 s
        pending.due(i * 0.1)
    assert not pending.storm
