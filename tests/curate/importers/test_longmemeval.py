"""The longmemeval importer: one scope per question, session or turn memories, abstention skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recall_kit.curate.importers import import_dataset
from recall_kit.dataset import read_dataset
from recall_kit.errors import OptionError


def user(text: str, has_answer: bool | None = None) -> dict:
    row: dict = {"role": "user", "content": text}
    if has_answer is not None:
        row["has_answer"] = has_answer
    return row


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


S1 = [user("hi"), assistant("hello")]
QUESTIONS = [
    {
        "question_id": "q_a", "question_type": "single-session-user", "question": "What car?",
        "answer": "Civic",
        "haystack_session_ids": ["s1", "answer_x1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 11:00"],
        "haystack_sessions": [S1, [user("I bought a Civic", True), assistant("nice")], [user("weather?")]],
        "answer_session_ids": ["answer_x1"],
    },
    {
        "question_id": "q_b", "question_type": "multi-session", "question": "What sports?",
        "answer": "running and swimming",
        "haystack_session_ids": ["s1", "answer_y1", "answer_y2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/23 (Tue) 09:00", "2023/05/24 (Wed) 09:00"],
        "haystack_sessions": [S1, [user("I run 5k", True)], [user("I swim", True), {**assistant("ok"), "has_answer": False}]],
        "answer_session_ids": ["answer_y1", "answer_y2"],
    },
    {
        "question_id": "q_c_abs", "question_type": "single-session-user", "question": "What boat?",
        "answer": "unanswerable", "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [S1], "answer_session_ids": [],
    },
    {
        "question_id": "q_d", "question_type": "temporal-reasoning", "question": "When?",
        "answer": "x", "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [S1], "answer_session_ids": ["answer_missing"],
    },
    {
        "question_id": "q_e", "question_type": "knowledge-update", "question": "Malformed?",
        "answer": "x", "haystack_session_ids": ["s1", "s2"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [S1], "answer_session_ids": ["s1"],
    },
    {
        "question_id": "q_f", "question_type": "knowledge-update", "question": "Which city?",
        "answer": "Oslo", "haystack_session_ids": ["s3", "s3", "answer_z"],
        "haystack_dates": ["2023/06/01 (Thu) 08:00", "2023/06/01 (Thu) 08:00", "some day"],
        "haystack_sessions": [[user("tea?")], [user("tea?")], [user("I moved to Oslo")]],
        "answer_session_ids": ["answer_z"],
    },
]


def write_longmemeval(path: Path) -> Path:
    path.write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return path


def test_session_granularity(tmp_path: Path) -> None:
    counts = import_dataset("longmemeval", write_longmemeval(tmp_path / "lme.json"), tmp_path / "out")
    assert counts == {
        "memories": 8,
        "queries": 3,
        "judgments": 4,
        "scopes": 3,
        "dropped": {
            "answer_sessions_not_in_haystack": 1,
            "questions_abstention": 1,
            "questions_malformed_haystack": 1,
            "questions_without_evidence": 1,
            "sessions_duplicate_in_haystack": 1,
        },
        "notes": {"dates_kept_as_text": 1},
    }
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    # The same session id in two haystacks is two memories, one per question's scope.
    assert dataset.corpus.get("q_a:s1").scope == "q_a"
    assert dataset.corpus.get("q_b:s1").scope == "q_b"
    assert dataset.corpus.get("q_a:answer_x1").content == "user: I bought a Civic\nassistant: nice"
    assert dataset.corpus.get("q_a:answer_x1").created_at == "2023-05-21T10:00:00"
    assert dataset.corpus.get("q_f:answer_z").created_at == "some day"
    assert dataset.qrels == {
        "q_a": {"q_a:answer_x1": 1},
        "q_b": {"q_b:answer_y1": 1, "q_b:answer_y2": 1},
        "q_f": {"q_f:answer_z": 1},
    }
    assert {q.query_id: (q.stratum, q.scope) for q in dataset.queries} == {
        "q_a": ("single-session-user", "q_a"),
        "q_b": ("multi-session", "q_b"),
        "q_f": ("knowledge-update", "q_f"),
    }


def test_turn_granularity(tmp_path: Path) -> None:
    source = write_longmemeval(tmp_path / "lme.json")
    counts = import_dataset("longmemeval", source, tmp_path / "out", {"granularity": "turn"})
    assert counts == {
        "memories": 10,
        "queries": 2,
        "judgments": 3,
        "scopes": 2,
        "dropped": {
            "answer_sessions_not_in_haystack": 1,
            "questions_abstention": 1,
            "questions_malformed_haystack": 1,
            "questions_without_evidence": 2,
            "sessions_duplicate_in_haystack": 1,
        },
        "notes": {"dates_kept_as_text": 1},
    }
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    assert dataset.qrels == {
        "q_a": {"q_a:answer_x1:1": 1},
        "q_b": {"q_b:answer_y1:1": 1, "q_b:answer_y2:1": 1},
    }
    assert dataset.corpus.get("q_a:answer_x1:2").content == "assistant: nice"
    with pytest.raises(OptionError, match="expected one of session, turn"):
        import_dataset("longmemeval", source, tmp_path / "bad", {"granularity": "round"})
