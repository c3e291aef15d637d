"""The locomo importer: turns as scoped memories, messy evidence parsed, drops counted."""

from __future__ import annotations

import json
from pathlib import Path

from recall_kit.curate.importers import import_dataset
from recall_kit.curate.importers.locomo import evidence_tokens, session_date
from recall_kit.dataset import read_dataset


def turn(speaker: str, dia_id: str | None, text: str | None, **extra: object) -> dict:
    row: dict = {"speaker": speaker, **extra}
    if dia_id is not None:
        row["dia_id"] = dia_id
    if text is not None:
        row["text"] = text
    return row


SAMPLES = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("Ann", "D1:1", "I adopted a dog"),
                turn("Bob", "D1:2", "What breed?"),
                turn("Ann", "D1:3", "A beagle", img_url=["http://x/1.jpg"], blip_caption="a photo of a beagle"),
            ],
            "session_2_date_time": "sometime in June",
            "session_2": [
                turn("Bob", "D2:1", "How is the beagle?"),
                turn("Ann", "D2:2", "Great"),
                turn("Ann", "D2:2", "a repeated dia_id"),
                turn("Ann", None, "a turn with no dia_id"),
            ],
        },
        "qa": [
            {"question": "What pet?", "answer": "dog", "evidence": ["D1:1"], "category": 4},
            {"question": "Which breed and pet?", "answer": "beagle", "evidence": ["D1:1; D1:3"], "category": 1},
            {"question": "When?", "answer": "May", "evidence": ["D1:2 D2:1", "D2:2,D1:2"], "category": 2},
            {"question": "Open?", "answer": "x", "evidence": ["D10:"], "category": 3},
            {"question": "Cat?", "adversarial_answer": "no", "evidence": ["D1:99"], "category": 5},
            {"question": "Beagle health?", "adversarial_answer": "ok", "evidence": ["D2:1", "D1:99"], "category": 5},
            {"question": "No evidence?", "answer": "x", "evidence": [], "category": 4},
            {"answer": "a question with no question"},
            {"question": "Odd category?", "answer": "x", "evidence": ["D1:1"], "category": 7},
        ],
    },
    {
        "sample_id": "conv-2",
        "conversation": {
            "speaker_a": "Cy",
            "speaker_b": "Di",
            "session_1_date_time": "10:00 am on 1 January, 2024",
            "session_1": [turn("Cy", "D1:1", "Hello")],
        },
        "qa": [{"question": "Greeting?", "answer": "Hello", "evidence": ["D1:1"], "category": 4}],
    },
]


def write_locomo(path: Path) -> Path:
    path.write_text(json.dumps(SAMPLES), encoding="utf-8")
    return path


def test_locomo_counts_and_validates(tmp_path: Path) -> None:
    counts = import_dataset("locomo", write_locomo(tmp_path / "locomo10.json"), tmp_path / "out")
    assert counts == {
        "memories": 6,
        "queries": 6,
        "judgments": 9,
        "scopes": 2,
        "dropped": {
            "evidence_duplicate": 1,
            "evidence_malformed": 1,
            "evidence_unresolved": 2,
            "questions_malformed": 1,
            "questions_without_resolvable_evidence": 3,
            "turns_bad_dia_id": 1,
            "turns_duplicate_dia_id": 1,
        },
        "notes": {"questions_unknown_category": 1, "session_dates_kept_as_text": 1},
    }
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    by_id = {q.query_id: q for q in dataset.queries}
    assert sorted(by_id) == ["conv-1:q1", "conv-1:q2", "conv-1:q3", "conv-1:q6", "conv-1:q9", "conv-2:q1"]
    assert {qid: q.stratum for qid, q in by_id.items()} == {
        "conv-1:q1": "single-hop", "conv-1:q2": "multi-hop", "conv-1:q3": "temporal",
        "conv-1:q6": "adversarial", "conv-1:q9": "unknown", "conv-2:q1": "single-hop",
    }
    assert by_id["conv-2:q1"].scope == "conv-2"
    # The gold answer is kept (the answer judge's); adversarial questions have none.
    assert by_id["conv-1:q1"].answer == "dog" and by_id["conv-2:q1"].answer == "Hello"
    assert by_id["conv-1:q6"].answer is None
    assert dataset.qrels["conv-1:q3"] == {"conv-1:D1:2": 1, "conv-1:D2:1": 1, "conv-1:D2:2": 1}
    assert dataset.qrels["conv-1:q2"] == {"conv-1:D1:1": 1, "conv-1:D1:3": 1}
    assert dataset.qrels["conv-1:q6"] == {"conv-1:D2:1": 1}
    first = dataset.corpus.get("conv-1:D1:1")
    assert (first.content, first.scope, first.created_at) == ("Ann: I adopted a dog", "conv-1", "2023-05-08T13:56:00")
    assert dataset.corpus.get("conv-1:D1:3").content == "Ann: A beagle [image: a photo of a beagle]"
    assert dataset.corpus.get("conv-1:D2:1").created_at == "sometime in June"
    assert dataset.corpus.get("conv-2:D1:1").scope == "conv-2"


def test_locomo_options(tmp_path: Path) -> None:
    source = write_locomo(tmp_path / "locomo10.json")
    counts = import_dataset("locomo", source, tmp_path / "out", {"captions": "false", "adversarial": "no"})
    assert counts["queries"] == 5  # the 6 above less conv-1:q6; q5 was never written
    assert counts["dropped"]["questions_adversarial_skipped"] == 2
    assert "evidence_unresolved" not in counts["dropped"]  # the skipped questions' evidence is not read
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    assert dataset.corpus.get("conv-1:D1:3").content == "Ann: A beagle"
    assert "adversarial" not in dataset.strata


def test_evidence_and_date_parsing() -> None:
    assert evidence_tokens(["D1:3; D2:4", "D3:1,D3:2 D4:1"]) == ["D1:3", "D2:4", "D3:1", "D3:2", "D4:1"]
    assert evidence_tokens("D1:1") == ["D1:1"]
    assert evidence_tokens(None) == []
    assert session_date("8:10 pm on 19 September, 2023") == ("2023-09-19T20:10:00", True)
    assert session_date("  ") == (None, False)
