"""The study's build graph (recall_kit.study.pipeline.graph) on two tiny real steps: a run computes what is
missing, a second run nothing, a changed input reruns the step and what needs it; status says why;
a step needing one that comes after it is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recall_kit.errors import RecallKitError
from recall_kit.study.pipeline.graph import Step, StudyGraph, folder_hashes


def _graph(folder: Path, settings: dict[str, int], made: list[str]) -> StudyGraph:
    def source(out: Path, inputs: dict[str, int]) -> None:
        made.append("source")
        (out / "n.txt").write_text(str(inputs["n"]), encoding="utf-8")

    def double(out: Path, inputs: dict[str, int]) -> None:
        made.append("double")
        n = int((folder / "steps" / "source" / "n.txt").read_text(encoding="utf-8"))
        (out / "twice.txt").write_text(str(2 * n * inputs["factor"]), encoding="utf-8")

    return StudyGraph(folder, [Step("source", [], lambda: {"n": settings["n"]}, source),
                               Step("double", ["source"], lambda: {"factor": settings["factor"]}, double)])


def test_a_run_computes_what_changed_and_what_needs_it_and_nothing_twice(tmp_path: Path) -> None:
    settings, made = {"n": 3, "factor": 1}, []
    first = _graph(tmp_path, settings, made).run()
    assert first.computed == ["source", "double"] and made == ["source", "double"]
    assert (tmp_path / "steps" / "double" / "twice.txt").read_text(encoding="utf-8") == "6"
    again = _graph(tmp_path, settings, made).run()  # the manifest read back by a new graph
    assert again.computed == [] and again.up_to_date == ["source", "double"]
    settings["factor"] = 2
    assert [s.state for s in _graph(tmp_path, settings, made).status()] == ["done", "stale"]
    third = _graph(tmp_path, settings, made).run()
    assert third.computed == ["double"] and (tmp_path / "steps" / "double" / "twice.txt").read_text(encoding="utf-8") == "12"
    settings["n"] = 5
    assert _graph(tmp_path, settings, made).run().computed == ["source", "double"]


def test_a_changed_file_makes_its_step_stale_and_a_rerun_restores_it(tmp_path: Path) -> None:
    settings: dict[str, int] = {"n": 3, "factor": 1}
    _graph(tmp_path, settings, []).run()
    (tmp_path / "steps" / "double" / "twice.txt").write_text("7", encoding="utf-8")
    states = {s.name: s for s in _graph(tmp_path, settings, []).status()}
    assert states["double"].state == "stale" and "files changed" in states["double"].why
    assert _graph(tmp_path, settings, []).run().computed == ["double"]
    assert folder_hashes(tmp_path / "steps" / "double") == _graph(tmp_path, settings, []).records["double"].files


def test_a_step_needing_a_later_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecallKitError, match="'first' needs 'second', which does not come before it"):
        StudyGraph(tmp_path, [Step("first", ["second"], dict, lambda out, inputs: None),
                              Step("second", [], dict, lambda out, inputs: None)])


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB tmpfs at tmp_path/disk (root only: elsewhere the test is skipped)."""
    from study_support import tmpfs

    with tmpfs(tmp_path / "disk", "size=256k") as disk:
        yield disk


def test_a_full_disk_in_a_step_names_the_step_folder(small_disk: Path) -> None:
    """Issue 72: a writer that names no file (a plain write() on a full disk) ended a study run with
    "Error: No space left on device (OSError)." and no path, even with --debug."""
    from recall_kit.errors import OutputError

    def fill(out: Path, inputs: dict) -> None:
        with (out / "big.bin").open("wb") as stream:
            for _ in range(64):
                stream.write(b"\0" * 16384)

    graph = StudyGraph(small_disk / "study", [Step("big", [], dict, fill)])
    with pytest.raises(OutputError) as refused:
        graph.run()
    message = str(refused.value)
    assert message.startswith(f"{small_disk / 'study' / 'steps' / 'big'}: cannot write the step 'big' there "
                              "(No space left on device)") and "\n" not in message
    assert not [p for p in (small_disk / "study" / "steps").iterdir() if ".partial" in p.name]
