"""The labelling session (recall_kit.label.session) without a server: what is offered (known,
non-sensitive memories, the qrels' checks mixed in), skip, back and resume from the file, another
assessor's file refused, the scale, notes and flags kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from recall_kit.curate.assessor import AssessorFile
from recall_kit.errors import DatasetError, OptionError
from recall_kit.label.session import open_session

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"
SENSITIVE = "152"  # is_sensitive in the example corpus (the pool holds it: conftest.py)


def test_every_pair_offered_is_a_known_non_sensitive_memory(pool: Path) -> None:
    session = open_session(None, "alice", pool=pool, dataset=EXAMPLE)
    # the pool's order, one query's pairs together; a pair the qrels judge (275) mixed in as a check,
    # then a check group of a query the qrels judge both ways (one not relevant, one relevant)
    assert session.queue() == [("exact_001", "10"), ("exact_001", "11"), ("exact_001", "275"), ("multi_001", "310"),
                               ("multi_001", "305"), ("exact_002", "12"), ("exact_002", "13")]
    assert session.checks[("exact_001", "275")] == 1 and session.checks[("multi_001", "310")] == 0
    with pytest.raises(OptionError):
        session.grade("exact_001", SENSITIVE, 1)
    with pytest.raises(OptionError):
        session.open("exact_001", SENSITIVE)


def test_skip_back_and_resume(pool: Path) -> None:
    session = open_session(None, "alice", pool=pool, dataset=EXAMPLE)
    first = session.current
    session.grade(*first, 1)
    second = session.current
    session.skip()
    assert session.current not in (first, second)
    session.back()
    assert session.current == second
    session.back()
    assert session.current == first
    session.grade(*first, 0)  # a new grade replaces the old one
    session.close()  # the server stops (its lock goes with it)
    again = open_session(None, "alice", pool=pool, dataset=EXAMPLE)  # after Ctrl-C: the file resumes it
    assert len(again.out) == 1 and again.out.grades[first[0]][first[1]] == 0
    assert again.current == second


def test_another_assessors_file_is_refused(pool: Path, tmp_path: Path) -> None:
    path = tmp_path / "alice.jsonl"
    AssessorFile.open(path, "bob").grade("exact_001", "10", 1)
    with pytest.raises(DatasetError, match="graded by 'bob'"):
        open_session(None, "alice", pool=pool, dataset=EXAMPLE, out=path)
    with pytest.raises(OptionError, match="--assessor"):
        AssessorFile.open(tmp_path / "x.jsonl", "../etc")


def test_the_scale_is_binary_unless_asked_and_a_note_and_flag_are_kept(pool: Path) -> None:
    session = open_session(None, "alice", pool=pool, dataset=EXAMPLE)
    with pytest.raises(OptionError, match="grade 2: one of 0, 1"):
        session.grade("exact_001", "10", 2)
    session.note("exact_001", "10", "  which release?  ", flagged=True)
    session.close()
    again = open_session(None, "alice", pool=pool, dataset=EXAMPLE, scale="graded")
    try:
        assert again.out.notes == {"exact_001": {"10": "which release?"}} and again.out.flagged == {"exact_001": ["10"]}
        again.grade("exact_001", "10", 3)
    finally:
        again.close()
    with pytest.raises(OptionError, match="scale"):
        open_session(None, "alice", pool=pool, dataset=EXAMPLE, scale="stars")




def test_a_pair_opened_from_the_contrast_view_is_graded_then_the_queue_resumes_where_it_was(pool: Path) -> None:
    session = open_session(None, "alice", pool=pool, dataset=EXAMPLE)
    try:
        shown = session.current
        assert shown == ("exact_001", "10") and session.upcoming(2) == [("exact_001", "11"), ("exact_001", "275")]
        session.open("exact_002", "13")
        assert session.current == ("exact_002", "13") and session.history == [shown]
        session.grade("exact_002", "13", 1)
        assert session.current == shown  # back to where the queue was
        assert session.grade_of("exact_002", "13") == 1 and session.grade_of("exact_001", "275") == 1  # the qrels'
        assert session.grade_of("exact_001", "10") is None
        assert ("exact_002", "13") not in session.queue()  # graded: not offered again
        with pytest.raises(OptionError):
            session.open("exact_002", "no-such-id")  # not a memory the corpus holds
        assert session.pace() is None  # one grade gives no pace
        session.grade(*session.current, 0)
        pace = session.pace()
        assert pace is not None and 0 <= pace < 60
    finally:
        session.close()
