"""A study against a forged manifest and values that would fail, or run for hours, only after many
steps: a forged step is never `done`, and the up-front check refuses what the bounds step or the
paired tests could not do."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import plugins, study_text

from recall_kit.study import run_study, study_status
from recall_kit.testing import invoke_cli


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        yield


@pytest.fixture(scope="module")
def done_study(tmp_path_factory: pytest.TempPathFactory, registered: None) -> Path:
    path = tmp_path_factory.mktemp("done") / "study.toml"
    path.write_text(study_text())
    run_study(path)
    return path


def test_a_forged_step_with_no_files_and_no_folder_is_not_done_and_the_run_rebuilds_it(
        tmp_path: Path, done_study: Path) -> None:
    """Before: `files: {}` with the step's folder removed was reported `done`, and every run failed."""
    folder = tmp_path / "study"
    shutil.copytree(done_study.parent, folder, symlinks=True)
    manifest = folder / "out" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["steps"]["lint"]["files"] = {}
    manifest.write_text(json.dumps(data))
    shutil.rmtree(folder / "out" / "steps" / "lint")
    states = {state.name: state.state for state in study_status(folder / "study.toml")}
    assert states["lint"] == "stale"
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        _, build = run_study(folder / "study.toml")
    assert "lint" in build.computed and (folder / "out" / "steps" / "lint").is_dir()


def refused(path: Path) -> str:
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0 and "unexpected" not in result.output, result.output
    assert not (path.parent / "out").exists()  # refused before any step
    return result.output


@pytest.mark.parametrize(("study", "said"), [
    ("hook_k = 10", "[study] decision_metrics: 'recall@10' reads a top 10: the bounds of a verdict enumerate every "
                    "labelling of at most 12 unjudged ids in two systems' tops, so its k is at most 6 (recall@6)"),
    ('decision_metrics = ["recall@50"]', "'recall@50' reads a top 50"),
    ('decision_metrics = ["err@5"]', "its k is at most 2 (err@2)"),
    ("resamples = 1000000000000", "[study] resamples = 1,000,000,000,000 is more than a p-value needs: at most 1,000,000"),
])
def test_what_would_fail_or_run_for_hours_after_many_steps_is_refused_up_front(
        tmp_path: Path, study: str, said: str) -> None:
    """Before: hook_k = 10 failed at the bounds step after 18 steps; resamples = 10**12 after 11
    steps with "unexpected MemoryError (7.28 TiB)"."""
    path = tmp_path / "study.toml"
    text = study_text(extra=study)
    if "resamples =" in study:
        text = text.replace("resamples = 50\n", "")
    path.write_text(text)
    assert said in refused(path)


def test_a_k_the_bounds_always_take_passes_the_check(tmp_path: Path) -> None:
    from recall_kit.study.validate import check_study_file

    path = tmp_path / "study.toml"
    path.write_text(study_text(extra='hook_k = 6\ndecision_metrics = ["recall@6", "ndcg@6", "mrr"]'))
    assert check_study_file(path).hook_k == 6


@pytest.mark.parametrize(("sweep", "said"), [
    ('[sweep]\nsystem = "bm25"\ngrid = ["bm25.k1=abc,def"]', "[sweep] grid bm25.k1=abc: "),
    ('[sweep]\ngrid = ["bm25.k1=1.2"]', "[sweep] grid is given but [sweep] system is not"),
])
def test_a_sweep_grid_that_cannot_run_is_refused_up_front(tmp_path: Path, sweep: str, said: str) -> None:
    """Before: `bm25.k1=abc,def` passed the check and failed at step 15; a grid without a system
    was ignored without a word."""
    path = tmp_path / "study.toml"
    path.write_text(study_text() + "\n" + sweep + "\n")
    assert said in refused(path)


def _labelled(tmp_path: Path, done_study: Path, relevance: dict[str, int]) -> Path:
    """A copy of the done study with alice's grades file (as `recall-kit label` writes it):
    exact_002 graded on line 2 with `relevance`."""
    folder = tmp_path / "study"
    shutil.copytree(done_study.parent, folder, symlinks=True)
    labels = folder / "out" / "labels"
    labels.mkdir(exist_ok=True)
    rows = [{"query_id": "exact_001", "assessor": "alice", "relevance": {"275": 1}},
            {"query_id": "exact_002", "assessor": "alice", "relevance": relevance}]
    (labels / "alice.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder / "study.toml"


def test_a_persons_grade_of_a_sensitive_memory_is_dropped_and_the_document_says_from_whose_file(
        tmp_path: Path, done_study: Path) -> None:
    """Issue 60: labels naming sensitive memories were dropped and counted, but the document never
    said so. Memory 152 is one of the example store's three sensitive rows."""
    path = _labelled(tmp_path, done_study, {"75": 1, "152": 2})
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(path)
    assert study.labels.sensitive_dropped == {"alice.jsonl": 1}
    markdown = (path.parent / "out" / "study.md").read_text()
    assert "1 label naming sensitive memories dropped (1 from alice.jsonl)" in markdown


def test_a_persons_grade_of_an_unknown_id_names_their_file_and_line(tmp_path: Path, done_study: Path) -> None:
    """Issue 60: it failed naming the study's own merged `qrels.jsonl:1`, not the person's file."""
    path = _labelled(tmp_path, done_study, {"75": 1, "no-such-memory": 2})
    outcome = invoke_cli(["study", "run", str(path)])
    assert outcome.exit_code == 2
    assert "alice.jsonl:2: id 'no-such-memory' (query 'exact_002') is not in the study's corpus" in outcome.output
    assert "qrels.jsonl" not in outcome.output


def test_a_study_file_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    """Before: "unexpected RecursionError"."""
    path = tmp_path / "study.toml"
    path.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert "not valid TOML (nested too deeply)" in refused(path)


def test_a_manifest_nested_too_deeply_is_refused_as_not_a_manifest(tmp_path: Path, done_study: Path) -> None:
    """Before: `study status` and `study run` said "unexpected RecursionError"."""
    folder = tmp_path / "study"
    shutil.copytree(done_study.parent, folder, symlinks=True)
    (folder / "out" / "manifest.json").write_text("[" * 100_000)
    for command in ("status", "run"):
        outcome = invoke_cli(["study", command, str(folder / "study.toml")])
        assert outcome.exit_code == 2 and "unexpected" not in outcome.output, outcome.output
        assert "holds files recall-kit did not make" in outcome.output or "not a recall-kit study manifest" in outcome.output


@pytest.mark.parametrize(("text", "says"), [
    (b'{"query_id": "exact_001", "relevance": {"75": 1' + b"0" * 5000 + b'}, "assessor": "alice"}\n', "not valid JSON"),
    (b"[" * 100_000 + b"\n", "not valid JSON (nested too deeply)"),
    (b'{"query_id": "exact_001", "relevance": {"75": 1}, "assessor": "al\xffice"}\n', "not UTF-8 text"),
], ids=["5001-digit grade", "deep", "not UTF-8"])
def test_a_persons_labels_file_the_parser_cannot_read_is_one_line_naming_it(
        tmp_path: Path, done_study: Path, text: bytes, says: str) -> None:
    """Before: the judgments step failed with "unexpected ValueError", "unexpected RecursionError" or
    "unexpected UnicodeDecodeError"."""
    path = _labelled(tmp_path, done_study, {"75": 1})
    (path.parent / "out" / "labels" / "alice.jsonl").write_bytes(text)
    outcome = invoke_cli(["study", "run", str(path)])
    assert outcome.exit_code == 2 and "unexpected" not in outcome.output, outcome.output
    assert f"alice.jsonl:1: {says}" in outcome.output


def test_more_people_than_pairwise_agreement_can_take_are_refused_up_front(tmp_path: Path, done_study: Path) -> None:
    """Before: 2,000 people's files (one grade each) ran 8 minutes, the agreement between every two
    people (2 million pairs) filling the document; 400 took 53 s."""
    path = _labelled(tmp_path, done_study, {"75": 1})
    labels = path.parent / "out" / "labels"
    for number in range(201):
        row = {"query_id": "exact_001", "relevance": {"275": number % 2}, "assessor": f"p{number}"}
        (labels / f"p{number}.jsonl").write_text(json.dumps(row) + "\n")
    outcome = invoke_cli(["study", "run", str(path)])
    assert outcome.exit_code == 2 and outcome.output.count("\n") == 1, outcome.output
    assert "[judging] people: 202 people's grades files; a study measures agreement between every two people, so " \
           "it takes at most 200" in outcome.output
