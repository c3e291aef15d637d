"""The `command` retriever against real programs: a Python search program over the fts5 plugin's
query, and an awk one (a second language) checked against a Python re-implementation."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from recall_kit_remote import CommandRetriever
from remote_helpers import EXAMPLE, SYSTEMS, dataset_with, run_cli

from recall_kit import SystemSpec, load_dataset, load_result, run_benchmark
from recall_kit.testing import RetrieverConformance, sample_corpus

#: mawk reads a pipe in blocks unless told to read it line by line; gawk and BusyBox awk need no flag.
AWK = "mawk -W interactive" if shutil.which("mawk") else "awk"
PYTHON_PROGRAM = f"{shlex.quote(sys.executable)} {shlex.quote(str(SYSTEMS / 'command_search.py'))} --faults"


def python_program() -> CommandRetriever:
    return CommandRetriever(CommandRetriever.Options(argv=PYTHON_PROGRAM, send_corpus=True))


class TestCommandConformance(RetrieverConformance):
    retriever_factory = python_program


def words(text: str) -> set[str]:
    return {word for word in re.split(r"[^a-z0-9]+", text.lower()) if word}


def overlap_reference(memories: dict[str, str], query: str, k: int) -> list[tuple[str, float]]:
    """What the awk program computes, written again in Python: distinct query words a memory
    holds, best first, ties by id descending (string order), memories sharing no word left out."""
    asked = words(query)
    scored = [(doc, float(len(asked & words(text)))) for doc, text in memories.items()]
    scored = [pair for pair in scored if pair[1] > 0]
    scored.sort(key=lambda pair: pair[0], reverse=True)
    scored.sort(key=lambda pair: pair[1], reverse=True)
    return scored[:k]


@pytest.fixture(scope="module")
def awk_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    memories = {memory.id: memory.searchable_text for memory in sample_corpus()}
    path = tmp_path_factory.mktemp("awk") / "corpus.tsv"
    path.write_text("".join(f"{doc}\t{' '.join(sorted(words(text)))}\n" for doc, text in memories.items()))
    return path, memories


def test_awk_program_answers_as_its_python_reference(awk_corpus: tuple[Path, dict[str, str]]) -> None:
    path, memories = awk_corpus
    retriever = CommandRetriever(CommandRetriever.Options(argv=f"{AWK} -f {SYSTEMS / 'overlap_search.awk'} {path} -",
                                                          timeout=10))
    retriever.build_index(sample_corpus())
    try:
        queries = [query.text for query in sample_corpus().queries] + ["kestrel driftwood postgres", "zzz"]
        for query in queries:
            for k in (1, 3, 10):
                hits = [(hit.id, hit.score) for hit in retriever.search(query, k)]
                assert hits == overlap_reference(memories, query, k), query
        assert retriever.search("kestrel", 5)  # a word the sample corpus holds
    finally:
        retriever.close()


def test_same_rankings_and_metrics_as_the_fts5_leg() -> None:
    """The corpus handed over in the first message, searched with the fts5 plugin's query."""
    dataset = load_dataset(str(EXAMPLE))
    local = run_benchmark(SystemSpec(retriever="fts5"), dataset, k=10, latency_sample=3, show_progress=False)
    remote = run_benchmark(SystemSpec(retriever="command", options={"command": {"argv": PYTHON_PROGRAM,
                                                                                 "send_corpus": True}}),
                           dataset, k=10, latency_sample=3, show_progress=False)
    assert remote.rankings() == local.rankings()
    assert remote.means() == local.means()
    wait = remote.latency.leg("command").wait
    assert wait is not None and wait.n == 3


def test_unreadable_answer_is_retried_then_named(tmp_path: Path, sample_folder: Path) -> None:
    folder = dataset_with(tmp_path, sample_folder, {3: "garbled"})
    out = tmp_path / "garbled.json"
    result = run_cli("eval", "--dataset", str(folder), "-r", "command", "-o", f"command.argv={PYTHON_PROGRAM}",
                     "-o", "command.send_corpus=true", "--max-failed", "1", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert any("failed on 1 of 6 queries" in warning and "para_allergy (the answer is not a JSON object; not retried"
               in warning for warning in load_result(out).warnings)


def test_program_dying_mid_run_is_one_line_exit_2_no_file(tmp_path: Path, sample_folder: Path) -> None:
    folder = dataset_with(tmp_path, sample_folder, {2: "crash"})
    out = tmp_path / "crash.json"
    result = run_cli("eval", "--dataset", str(folder), "-r", "command", "-o", f"command.argv={PYTHON_PROGRAM}",
                     "-o", "command.send_corpus=true", "--json", str(out))
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line
    assert "exited with status 3" in line  # its stderr is not printed: test_remote_secrets.py
    assert not out.exists()


def test_missing_program_is_one_line_exit_2(sample_folder: Path) -> None:
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "command",
                     "-o", "command.argv=no-such-search-program --fast")
    assert result.returncode == 2
    assert "\n" not in result.stderr.strip() and "no-such-search-program" in result.stderr


def test_an_id_outside_the_corpus_it_was_sent_is_a_broken_answer(tmp_path: Path, sample_folder: Path) -> None:
    """With send_corpus the program searches what it was sent: an unknown id is not "a store
    holding memories the dataset does not" (the warning it got before), it ends the run."""
    folder = dataset_with(tmp_path, sample_folder, {1: "invent"})
    result = run_cli("eval", "--dataset", str(folder), "-r", "command", "-o", f"command.argv={PYTHON_PROGRAM}",
                     "-o", "command.send_corpus=true", "--latency-sample", "0")
    assert result.returncode == 2
    assert "'invented-id'" in result.stderr and "not in the corpus it indexed" in result.stderr
    assert "store holds memories" not in result.stderr


def test_the_stderr_hint_names_where_debug_goes(tmp_path: Path, sample_folder: Path) -> None:
    folder = dataset_with(tmp_path, sample_folder, {2: "crash"})
    result = run_cli("eval", "--dataset", str(folder), "-r", "command", "-o", f"command.argv={PYTHON_PROGRAM}",
                     "-o", "command.send_corpus=true")
    assert "run 'recall-kit --debug eval ...' to show its last line" in result.stderr


def test_a_timeout_is_said_as_configured_not_as_what_was_left() -> None:
    """Before: "no answer within 0.999901 s" for a 1 s timeout (the deadline's remainder)."""
    silent = f"{shlex.quote(sys.executable)} -c 'import sys; [None for _ in sys.stdin]'"  # reads, never answers
    retriever = CommandRetriever(CommandRetriever.Options(argv=silent, timeout=1, tries=1))
    retriever.build_index(sample_corpus())
    try:
        answer = retriever.search("kestrel", 3)
    finally:
        retriever.close()
    assert getattr(answer, "reason", None) == "no answer within 1 s while answering a query; 1 try"
