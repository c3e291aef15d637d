"""Every study command takes the study file or its folder (issue 70: `study run examples` said
"Is a directory"), and a study's errors name its file one way: relative to the current folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import EXAMPLE, plugins, study_text

from recall_kit.testing import invoke_cli


@pytest.fixture()
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(before)


def test_run_and_status_take_the_study_file_its_folder_or_the_study_folder(in_tmp: Path) -> None:
    (in_tmp / "mine").mkdir()
    (in_tmp / "mine" / "study.toml").write_text(study_text(folder="results"))
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        ran = invoke_cli(["study", "run", "mine"])
        assert ran.exit_code == 0, ran.output
        assert f"Document: {Path('mine', 'results', 'study.md')} " in ran.output  # as the user would type it
        for given in ("mine", "mine/study.toml", "mine/results", str(in_tmp / "mine")):
            status = invoke_cli(["study", "status", given])
            assert status.exit_code == 0 and "done     document" in status.output, (given, status.output)
    from recall_kit.label.session import open_session

    for given in ("mine", "mine/study.toml", "mine/results"):  # recall-kit label takes the same
        session = open_session(given, "alice")
        try:
            assert session.material.folder is not None and session.material.folder.resolve() == (
                in_tmp / "mine" / "results").resolve()
        finally:
            session.close()


def test_a_folder_with_one_other_study_file_is_taken_and_one_with_none_or_two_is_one_line(in_tmp: Path) -> None:
    (in_tmp / "a").mkdir()
    (in_tmp / "a" / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # not a study file
    (in_tmp / "a" / "mine.toml").write_text(study_text(folder="out"))
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        status = invoke_cli(["study", "status", "a"])
        assert "missing  corpus" in status.output, status.output
        (in_tmp / "a" / "other.toml").write_text(study_text(folder="out2"))
        two = invoke_cli(["study", "status", "a"])
        assert two.exit_code == 2 and two.output.strip() == (
            "Error: a: a folder with 2 study files (mine.toml, other.toml); give one.")
        (in_tmp / "empty").mkdir()
        none = invoke_cli(["study", "run", "empty"])
        assert none.exit_code == 2 and none.output.startswith("Error: empty: a folder with no study file")
        assert none.output.strip().count("\n") == 0
        here = invoke_cli(["study", "run", "."])  # the current folder by its path, not "."
        assert here.exit_code == 2 and here.output.startswith(f"Error: {Path.cwd()}: a folder with no study file")


def test_a_study_files_mistakes_name_it_the_same_way_typed_relative_or_absolute(in_tmp: Path) -> None:
    (in_tmp / "s").mkdir()
    (in_tmp / "s" / "study.toml").write_text(study_text().replace("resamples = 50", "resamples = -1"))
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        said = {invoke_cli(["study", "run", given]).output.strip()
                for given in ("s/study.toml", str(in_tmp / "s" / "study.toml"), "s")}
    assert len(said) == 1, said
    assert said.pop().startswith(f"Error: {Path('s', 'study.toml')}: [study] resamples")


def test_a_missing_store_is_named_relative_to_the_current_folder(in_tmp: Path) -> None:
    (in_tmp / "s").mkdir()
    (in_tmp / "s" / "study.toml").write_text(study_text().replace(EXAMPLE.as_posix(), "nowhere"))
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        said = {invoke_cli(["study", "run", given]).output.strip().splitlines()[-1]
                for given in ("s/study.toml", str(in_tmp / "s" / "study.toml"))}
    assert said == {f"Error: {Path('s', 'nowhere', 'corpus.jsonl')}: not found ([store] dataset in study.toml)."}, said
