"""`recall_kit.measure.score.parallel.in_threads`: the pieces' results in order, errors raised."""

from __future__ import annotations

import threading

import pytest

from recall_kit.measure.score import parallel


def test_results_come_back_in_the_pieces_order_from_several_threads(monkeypatch):
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 3)
    seen: set[int] = set()
    barrier = threading.Barrier(3, timeout=10)  # passes only if three pieces run at once

    def work(piece: int) -> int:
        if piece < 3:
            barrier.wait()
        seen.add(threading.get_ident())
        return piece * piece

    assert parallel.in_threads(work, range(9)) == [piece * piece for piece in range(9)]
    assert len(seen) == 3


def test_one_cpu_or_one_piece_runs_in_the_callers_thread(monkeypatch):
    caller = threading.get_ident()
    assert parallel.in_threads(lambda piece: threading.get_ident(), [0]) == [caller]
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 1)
    assert parallel.in_threads(lambda piece: threading.get_ident(), [0, 1]) == [caller, caller]
    assert parallel.in_threads(lambda piece: piece, []) == []


def test_an_error_in_a_piece_is_raised_in_the_caller(monkeypatch):
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)

    def work(piece: int) -> int:
        if piece == 3:
            raise ValueError("piece 3")
        return piece

    with pytest.raises(ValueError, match="piece 3"):
        parallel.in_threads(work, range(5))
