"""`recall-kit study run`: the build graph's reruns, a change's reach, Ctrl-C and a rerun, status."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import plugins, subprocess_env

from recall_kit.study import run_study, study_status
from recall_kit.testing import invoke_cli

PLUGINS = ("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"

SMALL_STUDY = """
[study]
name = "small"
folder = "out"
hook_k = 5
exploratory_metrics = ["recall@10"]
baseline = "fts5"
resamples = 500

[store]
dataset = "{store}"

[evaluation_set]
queries = "dataset"

[[systems]]
name = "fts5"
retriever = "fts5"

[[systems]]
name = "bm25"
retriever = "bm25"
{bm25_options}

[[systems]]
name = "hybrid"
retriever = "fts5+bm25"
fusion = "rrf"

[sweep]
system = "hybrid"
grid = ["bm25=0.5,1"]
holdout = 0.5

[cost]
latency_sample = 5
"""


def write_study(folder: Path, bm25_options: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.toml"
    path.write_text(SMALL_STUDY.format(store=EXAMPLE.as_posix(), bm25_options=bm25_options), encoding="utf-8")
    return path


@pytest.fixture(scope="module", autouse=True)
def registered() -> Iterator[None]:
    with plugins(*PLUGINS):
        yield


@pytest.fixture(scope="module")
def small_study(tmp_path_factory: pytest.TempPathFactory, registered: None) -> Path:
    path = write_study(tmp_path_factory.mktemp("study"))
    run_study(path)
    return path


def mask_timings(markdown: str) -> str:
    """The document without what a clock decides: the latency table's rows, the step timings and
    the latency figures in the trade-off sentences."""
    out, skip = [], False
    for line in markdown.splitlines():
        if line.startswith("## "):
            skip = line.startswith(("## Latency and storage", "## Timings"))
        if not skip:
            out.append(line)
    text = "\n".join(out)
    text = re.sub(r"median latency [\d.]+ ms against [\d.]+ ms \(x[\d.]+\)", "median latency (masked)", text)
    return text


def test_a_rerun_with_nothing_changed_computes_nothing(small_study: Path) -> None:
    lines: list[str] = []
    started = time.perf_counter()
    _, build = run_study(small_study, log=lines.append)
    assert time.perf_counter() - started < 5
    assert build.computed == []
    assert lines == [f"study: nothing to do: all {len(build.up_to_date)} steps are up to date (computed nothing)."]
    assert all(state.state == "done" for state in study_status(small_study))


def test_the_document_and_the_manifest_are_json_and_text(small_study: Path) -> None:
    folder = small_study.parent / "out"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["schema"] == "recall-kit/study-manifest/1"
    assert list(manifest["steps"])[:3] == ["corpus", "evaluation-set", "lint"]
    assert not list(folder.rglob("*.pkl")) and not list(folder.rglob("*.pickle"))
    study = json.loads((folder / "study.json").read_text())
    assert study["schema"] == "recall-kit/study/2"
    markdown = (folder / "study.md").read_text()
    assert markdown.index("## Bottom line") < markdown.index("## Methodology") < markdown.index("## Head-to-head")
    assert "## Threats to validity" in markdown and "Checked and not found" in markdown
    assert (folder / "study.html").read_text().startswith("<!DOCTYPE html>")


def test_changing_one_candidate_reruns_only_it_and_its_dependents(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    run_study(path)
    write_study(tmp_path, bm25_options="[systems.options.bm25]\nk1 = 1.2\n")
    states = {state.name: state.state for state in study_status(path)}
    assert states["run/bm25"] == "stale" and states["run/fts5"] == "done" and states["run/hybrid"] == "done"
    _, build = run_study(path)
    # the pool is made from every run, the judgments from the pool (the same labels: nothing after them
    # changes but bm25's own evaluation), the comparisons and the bounds from every evaluation, the document from all
    assert build.computed == ["run/bm25", "pool", "judgments", "eval/bm25", "compare", "simpler", "bounds", "intervals",
                              "document"]


def test_status_says_missing_before_a_run(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    result = invoke_cli(["study", "status", str(path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[0].split() == ["missing", "corpus", "(never", "run)"]


def test_ctrl_c_mid_run_then_a_rerun_gives_the_same_document(tmp_path: Path, small_study: Path) -> None:
    env = subprocess_env(*PLUGINS)
    for attempt in range(4):
        path = write_study(tmp_path / f"interrupted-{attempt}")
        manifest = path.parent / "out" / "manifest.json"
        process = subprocess.Popen([sys.executable, "-m", "recall_kit", "study", "run", str(path)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # interrupt once the first system's run is recorded
            if manifest.exists() and "run/fts5" in manifest.read_text():
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)  # what `timeout -s INT` sends
        _, stderr = process.communicate(timeout=120)
        # the rest of the study takes about 3 s: on a loaded CI machine this test was once not
        # scheduled again before the study had finished (exit 0, every step computed); try again
        if not (process.returncode == 0 and b"computed" in stderr):
            break
    else:
        pytest.fail("the study finished before each of 4 interrupts could land")
    # 130, or killed by the SIGINT itself (-2): seen once in three fresh-clone runs, after the CLI had
    # printed its "Interrupted" line (a KeyboardInterrupt escaping at exit; the closing note has it).
    # What this test is about holds either way: nothing partial, and the rerun below.
    assert process.returncode in (130, -signal.SIGINT), stderr.decode()
    assert "Interrupted: outputs not yet finished were not written" in stderr.decode()
    assert not list((path.parent / "out").rglob(".*.partial*"))
    steps = json.loads(manifest.read_text())["steps"]
    assert "document" not in steps
    finished = subprocess.run([sys.executable, "-m", "recall_kit", "study", "run", str(path)],
                              capture_output=True, text=True, env=env, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert "study: run/fts5: computing" not in finished.stderr  # done before the interrupt: kept
    again = (path.parent / "out" / "study.md").read_text()
    clean = (small_study.parent / "out" / "study.md").read_text()
    assert mask_timings(again) == mask_timings(clean)


def test_a_bad_study_file_is_one_line(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    path.write_text(path.read_text().replace("hook_k = 5", "hook_k = 5\nhok = 3"))
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert "unknown key 'hok' in [study]" in result.output and "study.toml" in result.output


def test_an_unknown_retriever_fails_before_any_step_naming_its_system(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    path.write_text(path.read_text().replace('retriever = "bm25"', 'retriever = "bm2"'))
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2
    assert "study.toml: system 'bm25': Unknown retriever 'bm2'" in result.output
    assert not (tmp_path / "out").exists()


def test_a_step_whose_files_were_changed_is_stale_and_rebuilt_alone(small_study: Path) -> None:
    lint = small_study.parent / "out" / "steps" / "lint" / "lint.json"
    original = lint.read_bytes()
    lint.write_text("{}")
    states = {state.name: (state.state, state.why) for state in study_status(small_study)}
    assert states["lint"] == ("stale", "its files changed or went missing")
    assert states["document"] == ("pending", "recomputed only if what lint writes comes out different")
    assert [name for name, (state, _) in states.items() if state != "done"] == ["lint", "document"]
    _, build = run_study(small_study)
    assert build.computed == ["lint"]  # rebuilt as it was: nothing that reads it changes
    assert lint.read_bytes() == original


def test_a_long_step_off_a_terminal_says_it_is_alive_and_on_a_terminal_does_not() -> None:
    import time

    from recall_kit.study.pipeline.graph import heartbeat

    lines: list[str] = []
    with heartbeat("ablation", lines.append, every=0.05, terminal=False):
        time.sleep(0.3)
    assert len(lines) >= 2 and lines[0].startswith("study: ablation: still computing (")
    quiet: list[str] = []
    with heartbeat("ablation", quiet.append, every=0.05, terminal=True):
        time.sleep(0.2)
    assert quiet == []


def test_a_generator_that_falls_short_says_asked_and_generated(tmp_path: Path) -> None:
    """`exact = N` beyond what the corpus yields, though within its size (a request for more queries
    than memories is refused by the study file's check): the stratum says "asked N, generated M"
    (M < N), and a request the corpus meets says nothing of the kind. Thirty one-word memories
    beside the example's yield no phrase."""
    from study_support import LEXICAL_PAIR

    corpus = tmp_path / "corpus.jsonl"
    rows = (EXAMPLE / "corpus.jsonl").read_text().splitlines()
    rows += [json.dumps({"id": f"short-{i}", "content": "ok"}) for i in range(30)]
    corpus.write_text("\n".join(rows) + "\n")

    text = f"""
[study]
name = "short"
folder = "out"
resamples = 200

[store]
jsonl = "{corpus.as_posix()}"

[evaluation_set]
queries = "generated"
exact = {{exact}}
""" + LEXICAL_PAIR
    path = tmp_path / "study.toml"
    path.write_text(text.format(exact=350))
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(path)
    [stratum] = study.strata
    assert f"asked 350, generated {stratum.queries})" in stratum.built and stratum.queries < 350
    assert f"asked 350, generated {stratum.queries}" in (tmp_path / "out" / "study.md").read_text()
    path.write_text(text.format(exact=20))
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(path)
    assert study.strata[0].queries == 20 and "asked" not in study.strata[0].built
