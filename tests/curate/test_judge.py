"""`judge`, driven through its functions: grades, skip, help, quit; saved after every answer;
resumes without asking again; merges with existing judgments without losing any."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall_kit.cli import app
from recall_kit.curate.judge import JudgeSession, journal_path, judge, read_journal
from recall_kit.dataset import load_dataset
from recall_kit.testing import write_sample_dataset

# Sample qrels: exact_keys {4: 1}, multi_deploy {5: 1, 4: 0}, para_coffee {3: 1}, ...
POOL = [
    {"query_id": "exact_keys", "doc_ids": ["5", "4", "9"], "systems": {}},
    {"query_id": "multi_deploy", "doc_ids": ["4", "6", "12"]},
    {"query_id": "para_coffee", "doc_ids": ["10"]},
]
# Pool pairs in order: 1 keys/5, 2 keys/4 (judged), 3 keys/9, 4 deploy/4 (judged 0), 5 deploy/6,
# 6 deploy/12, 7 coffee/10.


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    dataset = write_sample_dataset(tmp_path / "sample")
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(row) + "\n" for row in POOL), encoding="utf-8")
    return pool, dataset, tmp_path / "judged" / "qrels.jsonl"


class Script:
    """Feeds answers to the session and records the prompts it was asked."""

    def __init__(self, answers: Iterable[str]) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.shown: list[str] = []

    def ask(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self.answers:
            raise EOFError
        return self.answers.pop(0)

    def show(self, text: str) -> None:
        self.shown.append(text)


def read_out(path: Path) -> dict[str, dict[str, int]]:
    return {row["query_id"]: row["relevance"] for row in map(json.loads, path.read_text().splitlines())}


def test_grades_skip_help_quit_and_save_after_every_answer(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, out = setup
    script = Script(["2", "?", "7", "s", "0", "q"])
    counts = judge(pool, dataset, out, ask=script.ask, show=script.show)
    assert counts == {"answered": 2, "skipped": 1, "left": 3, "total": 7, "not_in_dataset": 0}
    assert [p.split(" [")[0] for p in script.prompts] == ["grade 1/7", "grade 3/7", "grade 3/7", "grade 3/7",
                                                          "grade 5/7", "grade 6/7"]
    shown = "\n".join(script.shown)
    assert "[1/7] query exact_keys" in shown and "memory 5" in shown
    assert "3  highly relevant" in shown  # the help
    assert "Please answer 0, 1, 2, 3, s, q or ?." in shown
    assert read_journal(journal_path(out)) == [("exact_keys", "5", 2), ("multi_deploy", "6", 0)]
    judged = read_out(out)
    assert judged["exact_keys"] == {"4": 1, "5": 2}
    assert judged["multi_deploy"] == {"5": 1, "4": 0, "6": 0}
    assert judged["multi_db"] == {"1": 2, "2": 1, "11": 1}  # untouched dataset judgments kept


def test_resume_asks_only_what_is_left(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, out = setup
    judge(pool, dataset, out, ask=Script(["2", "s", "0", "q"]).ask, show=lambda _: None)
    second = Script(["1", "3", "1"])
    counts = judge(pool, dataset, out, ask=second.ask, show=second.show)
    assert [p.split(" [")[0] for p in second.prompts] == ["grade 3/7", "grade 6/7", "grade 7/7"]
    assert second.shown[0].startswith("4 of 7 pairs already judged; 3 to go.")
    assert counts["left"] == 0 and counts["answered"] == 3
    judged = read_out(out)
    assert judged["exact_keys"] == {"4": 1, "5": 2, "9": 1}
    assert judged["multi_deploy"] == {"5": 1, "4": 0, "6": 0, "12": 3}
    assert judged["para_coffee"] == {"3": 1, "10": 1}

    def never(prompt: str) -> str:
        raise AssertionError(f"asked again: {prompt}")

    assert judge(pool, dataset, out, ask=never, show=lambda _: None)["left"] == 0


def test_existing_out_grades_are_kept_and_not_asked(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, out = setup
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps({"query_id": "exact_keys", "relevance": {"5": 3, "4": 0}}) + "\n")
    script = Script(["1", "q"])
    judge(pool, dataset, out, ask=script.ask, show=script.show)
    assert script.prompts[0].startswith("grade 3/7")  # keys/5 was judged in --out
    judged = read_out(out)
    # The dataset's grade for keys/4 (1) came first and wins over --out's 0; --out's 5 is kept.
    assert judged["exact_keys"] == {"4": 1, "5": 3, "9": 1}


def test_torn_journal_line_and_a_crash_before_the_qrels_rewrite(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, out = setup
    journal = journal_path(out)
    journal.parent.mkdir(parents=True)
    # One whole entry that never reached the qrels file, then half a line (power cut mid-write).
    journal.write_text(json.dumps({"query_id": "para_coffee", "doc_id": "10", "grade": 2}) + "\n"
                       + '{"query_id": "exact_k')
    session = JudgeSession.open(pool, dataset, out)
    assert read_out(out)["para_coffee"] == {"3": 1, "10": 2}  # repaired on open
    assert not session.is_judged("exact_keys", "5")
    assert journal.read_text().endswith("\n")  # the torn half line was cut on open
    session.record("exact_keys", "5", 3)  # ...so the next record is not glued to it
    assert read_journal(journal) == [("para_coffee", "10", 2), ("exact_keys", "5", 3)]
    script = Script(["q"])
    session.run(ask=script.ask, show=script.show)
    assert script.prompts[0].startswith("grade 3/7")  # two of the pool pairs now judged


def test_an_unwritable_out_fails_before_the_first_answer(setup: tuple[Path, Path, Path]) -> None:
    from recall_kit.errors import OutputError

    pool, dataset, out = setup
    out.mkdir(parents=True)  # --out names a folder
    script = Script(["3"])
    with pytest.raises(OutputError, match="is a folder"):
        judge(pool, dataset, out, ask=script.ask, show=script.show)
    assert script.prompts == []  # nothing was asked
    blocker = out.parent / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="is a file, not a folder"):
        judge(pool, dataset, blocker / "qrels.jsonl", ask=script.ask, show=script.show)
    assert script.prompts == []


def test_out_may_be_the_dataset_qrels_itself(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, _ = setup
    before = load_dataset(dataset).qrels
    judge(pool, dataset, dataset / "qrels.jsonl", ask=Script(["3", "0", "0", "0", "0"]).ask, show=lambda _: None)
    after = load_dataset(dataset).qrels
    for query_id, grades in before.items():
        for doc, grade in grades.items():
            assert after[query_id][doc] == grade
    assert after["exact_keys"]["5"] == 3 and after["para_coffee"]["10"] == 0


def test_pool_ids_missing_from_the_dataset_are_counted_not_asked(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, out = setup
    pool.write_text(json.dumps({"query_id": "exact_keys", "doc_ids": ["999", "5"]}) + "\n")
    script = Script(["1"])
    counts = judge(pool, dataset, out, ask=script.ask, show=script.show)
    assert counts["not_in_dataset"] == 1 and len(script.prompts) == 1


def test_cli_reads_answers_from_stdin(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, out = setup
    result = CliRunner().invoke(app, ["judge", str(pool), "--dataset", str(dataset), "--out", str(out)],
                                input="2\nq\n")
    assert result.exit_code == 0, result.output
    assert "[1/7] query exact_keys" in result.output
    assert "4 of 7 pairs still unjudged" in result.output
    assert read_out(out)["exact_keys"]["5"] == 2


def test_bad_pool_file_is_one_clear_error(setup: tuple[Path, Path, Path]) -> None:
    pool, dataset, out = setup
    pool.write_text('{"query_id": "exact_keys"}\n')
    result = CliRunner().invoke(app, ["judge", str(pool), "--dataset", str(dataset), "--out", str(out)])
    assert result.exit_code == 2
    assert "pool.jsonl:1: expected" in result.output


@pytest.mark.parametrize("grade", ["1_0", "\u0661", "2.5", "high", "3", True])
def test_an_existing_qrels_grade_that_is_not_a_whole_number_is_named(tmp_path: Path, grade: object) -> None:
    # int("1_0") is 10: merging into such a file would change a grade without a word. A string or
    # a bool is no grade either (issue 37: "3" and true were read as 3 and 1).
    from recall_kit.curate.judge import read_qrels_file
    from recall_kit.errors import DatasetError

    path = tmp_path / "qrels.jsonl"
    path.write_text(json.dumps({"query_id": "q1", "relevance": {"m1": 1}}) + "\n"
                    + json.dumps({"query_id": "q2", "relevance": {"m2": grade}}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"qrels\.jsonl:2: grade .* of id 'm2' is not a whole number"):
        read_qrels_file(path)
    path.write_text(json.dumps({"query_id": "q2", "relevance": {"m3": 2, "m4": 1.0}}) + "\n", encoding="utf-8")
    assert read_qrels_file(path) == {"q2": {"m3": 2, "m4": 1}}
