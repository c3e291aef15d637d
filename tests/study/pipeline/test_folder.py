"""The study folder is the study's alone (issue 46): new, empty or made by recall-kit; nothing
written through a link out of it; every path in its manifest inside it; one run at a time; what the
document copies from study.toml bounded; leftovers of a replaced step-folder link removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import EXAMPLE, plugins, study_text, tmpfs

from recall_kit.errors import RecallKitError, SpecError
from recall_kit.fileio import write_text_atomic
from recall_kit.study import run_study, study_status
from recall_kit.study.config import load_study
from recall_kit.study.pipeline.folder import LOCK_FILE, StudyFolderError
from recall_kit.testing import invoke_cli


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        yield


@pytest.fixture(scope="module")
def done_study(tmp_path_factory: pytest.TempPathFactory, registered: None) -> Path:
    """A study run once (two lexical systems on the example store): its study file."""
    path = tmp_path_factory.mktemp("done") / "study.toml"
    path.write_text(study_text())
    run_study(path)
    return path


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != LOCK_FILE}


# -- which folder --------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", [".", "", "..", "/"])
def test_a_folder_holding_the_study_file_or_the_root_is_refused_and_nothing_is_written(tmp_path: Path,
                                                                                      folder: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "study.md"  # named so that the document would replace it
    path.write_text(study_text(folder))
    before = tree(tmp_path)
    with pytest.raises(StudyFolderError) as caught:
        run_study(path)
    message = str(caught.value)
    assert "\n" not in message and "[study] folder" in message
    assert ("root" in message) if folder == "/" else ("holds the study file" in message)
    assert tree(tmp_path) == before


def test_a_folder_of_the_users_own_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "study.md").write_text("my own notes")
    (mine / "study.html").write_text("<p>mine</p>")
    path = tmp_path / "s.toml"
    path.write_text(study_text("notes"))
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2 and "did not make (study.html, study.md)" in result.output
    assert result.output.strip().count("\n") == 0
    assert tree(mine) == {"study.md": b"my own notes", "study.html": b"<p>mine</p>"}


def test_a_file_named_as_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file")
    (tmp_path / "s.toml").write_text(study_text("out"))
    with pytest.raises(StudyFolderError, match="is a file, not a folder"):
        run_study(tmp_path / "s.toml")


def test_the_default_folder_is_named_after_the_study_file(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(study_text(None))
    (tmp_path / "b.toml").write_text(study_text(None))
    assert load_study(tmp_path / "a.toml").folder == tmp_path / "a-out"
    assert load_study(tmp_path / "b.toml").folder == tmp_path / "b-out"
    for name in ("one.toml", "two.toml"):
        result = invoke_cli(["study", "init", str(tmp_path / name), "--dataset", str(EXAMPLE)])
        assert result.exit_code == 0, result.output
    assert load_study(tmp_path / "one.toml").folder != load_study(tmp_path / "two.toml").folder
    assert load_study(tmp_path / "two.toml").folder == tmp_path / "two-out"


def test_a_second_study_file_naming_the_first_ones_folder_is_refused(done_study: Path, tmp_path: Path) -> None:
    other = done_study.parent / "copy.toml"
    other.write_text(done_study.read_text())
    before = tree(done_study.parent / "out")
    with pytest.raises(StudyFolderError, match=r"another study file \(study.toml\)"):
        run_study(other)
    assert tree(done_study.parent / "out") == before
    other.unlink()


# -- links ----------------------------------------------------------------------------------------


def test_a_document_link_is_replaced_not_written_through(done_study: Path) -> None:
    out = done_study.parent / "out"
    user = done_study.parent / "user.md"
    user.write_text("the user's own file")
    (out / "study.md").unlink()
    (out / "study.md").symlink_to(Path("..") / "user.md")
    run_study(done_study)
    assert user.read_text() == "the user's own file"
    assert not (out / "study.md").is_symlink() and (out / "study.md").read_text().startswith("#")


def test_a_linked_manifest_is_refused_and_its_target_untouched(tmp_path: Path, done_study: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "precious.json"
    target.write_text((done_study.parent / "out" / "manifest.json").read_text())
    (out / "manifest.json").symlink_to(target)
    (tmp_path / "study.toml").write_text(study_text("out"))
    before = target.read_bytes()
    with pytest.raises(StudyFolderError, match="did not make"):
        run_study(tmp_path / "study.toml")
    assert target.read_bytes() == before and (out / "manifest.json").is_symlink()


def test_atomic_open_can_replace_a_link_instead_of_its_target(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("kept")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text_atomic(link, "new", follow_links=False)
    assert target.read_text() == "kept" and not link.is_symlink() and link.read_text() == "new"
    devnull = tmp_path / "null"
    devnull.symlink_to("/dev/null")
    write_text_atomic(devnull, "x", follow_links=False)  # a link to a device: the link replaced too
    assert devnull.read_text() == "x"


def test_init_force_replaces_a_linked_study_file_not_its_target(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.toml"
    target.write_text("# the user's file")
    (tmp_path / "study.toml").symlink_to(target)
    result = invoke_cli(["study", "init", str(tmp_path / "study.toml"), "--dataset", str(EXAMPLE), "--force"])
    assert result.exit_code == 0, result.output
    assert target.read_text() == "# the user's file"
    assert not (tmp_path / "study.toml").is_symlink() and "[study]" in (tmp_path / "study.toml").read_text()


def test_a_link_on_the_way_to_the_steps_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"schema": "recall-kit/study-manifest/1", "steps": {}}))
    (out / "steps").symlink_to(outside)
    (tmp_path / "study.toml").write_text(study_text("out"))
    with pytest.raises(StudyFolderError, match="is a link"):
        run_study(tmp_path / "study.toml")
    assert list(outside.iterdir()) == []


def test_a_linked_step_folder_is_replaced_and_no_old_link_is_left(tmp_path: Path, done_study: Path) -> None:
    import shutil

    folder = tmp_path / "study"
    shutil.copytree(done_study.parent, folder, symlinks=True)
    out = folder / "out"
    kept = tmp_path / "kept-lint"
    shutil.copytree(out / "steps" / "lint", kept)
    shutil.rmtree(out / "steps" / "lint")
    (out / "steps" / "lint").symlink_to(kept)
    (kept / "lint.json").write_text("{}")  # changed: the step is stale and rebuilt
    leftover_target = tmp_path / "leftover-target"
    leftover_target.mkdir()
    (leftover_target / "keep.txt").write_text("keep")
    (out / "steps" / "run" / ".fts5.partial123-old").symlink_to(leftover_target)
    _, build = run_study(folder / "study.toml")
    assert "lint" in build.computed
    assert not (out / "steps" / "lint").is_symlink() and (kept / "lint.json").read_text() == "{}"
    names = [p.name for p in (out / "steps").rglob("*") if ".partial" in p.name]
    assert names == []
    assert (leftover_target / "keep.txt").read_text() == "keep"


# -- the manifest ----------------------------------------------------------------------------------


@pytest.mark.parametrize("forged", ["/etc/passwd", "../../../x", "a/../../../../x"])
def test_a_manifest_naming_a_path_outside_the_folder_is_refused(tmp_path: Path, done_study: Path,
                                                                forged: str) -> None:
    import shutil

    folder = tmp_path / "study"
    shutil.copytree(done_study.parent, folder, symlinks=True)
    manifest = folder / "out" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["steps"]["lint"]["files"] = {forged: "0" * 64}
    manifest.write_text(json.dumps(data))
    with pytest.raises(RecallKitError, match="outside the study folder") as caught:
        study_status(folder / "study.toml")
    assert "\n" not in str(caught.value)
    result = invoke_cli(["study", "status", str(folder / "study.toml")])
    assert result.exit_code == 2 and "outside the study folder" in result.output


def test_a_recorded_file_that_links_out_of_the_folder_is_never_done(tmp_path: Path, done_study: Path) -> None:
    import shutil

    from recall_kit.study.pipeline.graph import file_hash

    folder = tmp_path / "study"
    shutil.copytree(done_study.parent, folder, symlinks=True)
    outside = tmp_path / "outside.json"
    lint = folder / "out" / "steps" / "lint" / "lint.json"
    outside.write_bytes(lint.read_bytes())
    lint.unlink()
    lint.symlink_to(outside)
    assert file_hash(lint) == file_hash(outside)  # the hash alone would call it done
    states = {state.name: state.state for state in study_status(folder / "study.toml")}
    assert states["lint"] == "stale"


# -- the lock --------------------------------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from recall_kit.study.pipeline.folder import study_lock
with study_lock(Path(sys.argv[1])):
    print("holding", flush=True)
    time.sleep(60)
"""


def test_a_second_run_on_a_locked_folder_is_refused_naming_the_holder(done_study: Path) -> None:
    out = done_study.parent / "out"
    before = tree(out)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        result = invoke_cli(["study", "run", str(done_study)])
        assert result.exit_code == 2 and f"process {holder.pid} " in result.output
        assert result.output.strip().count("\n") == 0
    finally:
        holder.kill()
        holder.wait()
    assert tree(out) == before
    run_study(done_study)  # the holder is gone: its lock is taken


def test_a_lock_left_by_a_killed_run_is_taken_over(done_study: Path) -> None:
    out = done_study.parent / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    holder.kill()  # SIGKILL: nothing could clean up
    holder.wait()
    assert json.loads((out / LOCK_FILE).read_text())["pid"] == holder.pid
    _, build = run_study(done_study)
    assert build.computed == []


def test_two_runs_at_once_one_computes_and_the_other_is_refused(tmp_path: Path) -> None:
    from study_support import subprocess_env

    path = tmp_path / "study.toml"
    path.write_text(study_text("out"))
    env = subprocess_env("recall-kit-fts5", "recall-kit-bm25")
    command = [sys.executable, "-m", "recall_kit", "study", "run", str(path)]
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    time.sleep(0.5)
    runs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outcomes = [(run.wait(300), run.stderr.read() if run.stderr else "") for run in runs]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 2], outcomes
    refused = next(err for code, err in outcomes if code == 2)
    assert "another study run (process" in refused
    states = study_status(path)
    assert all(state.state == "done" for state in states)


# -- what the document copies -------------------------------------------------------------------------


def test_a_huge_priors_list_is_refused_before_anything_runs(tmp_path: Path) -> None:
    priors = ", ".join(f'"p{i}"' for i in range(100_000))
    path = tmp_path / "s.toml"
    path.write_text(study_text("out") + f"\n[production]\npriors = [{priors}]\n")
    with pytest.raises(SpecError, match=r"\[production\] priors names 100000 priors; at most 64"):
        load_study(path)
    path.write_text(study_text("out") + f'\n[production]\nsubstrate = "{"x" * 5000}"\n')
    with pytest.raises(SpecError, match=r"\[production\] substrate: a value of 5000 characters"):
        load_study(path)
    assert not (tmp_path / "out").exists()


def test_a_few_priors_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(study_text("out") + '\n[production]\npriors = ["importance", "recency"]\n')
    assert load_study(path).production == {"priors": ["importance", "recency"]}


def test_the_lock_file_alone_does_not_make_a_folder_foreign(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_FILE).write_text("")
    from recall_kit.study.pipeline.folder import check_study_folder

    check_study_folder(out, tmp_path / "s.toml")  # no error
    os.remove(out / LOCK_FILE)


def test_a_read_only_study_folder_is_said_to_be_read_only_not_busy(tmp_path: Path) -> None:
    """Issue 72: a read-only study folder was reported as "another study run ... is writing this study
    folder". A real read-only filesystem (a tmpfs mounted ro; root only, else skipped)."""
    with tmpfs(tmp_path / "out", "ro,size=64k") as out:
        path = tmp_path / "study.toml"
        path.write_text(study_text())
        result = invoke_cli(["study", "run", str(path)])
        assert result.exit_code == 2
        message = result.stderr.strip().splitlines()[-1]
        assert message == (f"Error: {out}: cannot make the lock file {LOCK_FILE} there (Read-only file system); "
                           "make the folder writable, or choose another."), message
        assert "another study run" not in result.stderr
