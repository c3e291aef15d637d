"""Calls in flight (recall_kit_llm.calls): results in the items' order whatever order they finish
in, never more than N at once, items read lazily, an error raised in its turn, a model in this
process held to one call at a time (and said so), the progress line's counts."""

from __future__ import annotations

import io
import threading
import time

import pytest
from recall_kit_llm.calls import CallStats, Progress, effective_concurrency, in_process, ordered_map


def test_results_come_in_item_order_whatever_order_they_finish_in():
    # Within each window of 8 in flight the later items sleep less (40 ms down to 5 ms), so they
    # finish first: out of order by construction, not by chance (one Random per item made every
    # delay the same, and the order sorted on a quiet machine).
    delays = [0.005 * (8 - i % 8) for i in range(40)]
    finished: list[int] = []

    def work(i: int) -> int:
        time.sleep(delays[i])
        finished.append(i)
        return i * i

    assert list(ordered_map(work, range(40), 8)) == [i * i for i in range(40)]
    assert finished != sorted(finished)  # they did finish out of order


def test_never_more_than_n_in_flight_and_items_read_lazily():
    lock, state = threading.Lock(), {"now": 0, "most": 0}
    read: list[int] = []

    def work(i: int) -> int:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.01)
        with lock:
            state["now"] -= 1
        return i

    def items():
        for i in range(100):
            read.append(i)
            yield i

    stats = CallStats()
    results = ordered_map(work, items(), 4, stats)
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    assert len(read) <= 3 + 2 * 4  # taken at most 2 x concurrency ahead of what was yielded
    assert list(results) == list(range(3, 100))
    assert state["most"] == 4 and stats.in_flight == 0


def test_an_error_is_raised_in_its_turn_and_leaves_no_call_running():
    running = []

    def work(i: int) -> int:
        running.append(i)
        time.sleep(0.01)
        if i == 5:
            raise ValueError("five")
        return i

    got = []
    with pytest.raises(ValueError, match="five"):
        for value in ordered_map(work, range(50), 4):
            got.append(value)
    assert got == [0, 1, 2, 3, 4]
    assert len(running) < 50  # items past the window were never started
    assert not [t for t in threading.enumerate() if t.name.startswith("recall-kit-call")]


class _Model:
    model_id = "m"


def test_a_model_in_this_process_takes_one_call_at_a_time_and_says_so():
    said: list[str] = []
    local = type("LocalModel", (), {"model_id": "tiny", "in_process": True})()
    assert in_process(local) and not in_process(_Model())
    assert effective_concurrency(local, 8, "judge", said.append) == 1
    assert said == ["judge: tiny runs in this process: one call at a time (concurrency 8 applies to servers "
                    "and hosted models)."]
    assert effective_concurrency(local, None, "judge", said.append) == 1 and len(said) == 1  # the default: silent
    assert effective_concurrency(_Model(), None, "judge") == 16
    assert effective_concurrency(_Model(), 3, "judge") == 3
    with pytest.raises(ValueError):
        effective_concurrency(_Model(), 0, "judge")


def test_progress_says_done_in_flight_cached_retried_and_time_left(monkeypatch):
    monkeypatch.setenv("RECALL_KIT_PROGRESS_INTERVAL", "0")
    stream = io.StringIO()
    stats = CallStats()
    progress = Progress("judge", 4, stats, stream)

    def work(i: int) -> int:
        stats.add(calls=1, cached=i % 2, retried=1 if i == 3 else 0)
        return i

    assert list(ordered_map(work, range(4), 2, stats, progress)) == [0, 1, 2, 3]
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("judge: 1/4 done (") and "in flight" in lines[0] and "left" in lines[0]
    assert lines[-1].startswith("judge: 4/4 done (4 calls, 2 cached), 0 in flight, 1 retried, about 0s left")
