"""`recall-kit remote probe`: one call to a real server, its answer's shape and the options that
read it; those options, passed back, evaluate the server (the reference MCP memory server, the
text-answering hash service, an HTTP endpoint answering in text). No memory text is printed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from http_server import SearchServer
from memory_store import MemoryStore
from recall_kit_remote.probe import describe_json, describe_text
from remote_helpers import EXAMPLE, reference_server_command, reference_server_missing, run_cli
from test_text_answers import TEXT_OPTIONS, fts5_rankings, hash_command, same

from recall_kit import SystemSpec, load_dataset, run_benchmark


def probed_options(done_stdout: str, adapter: str) -> dict[str, str]:
    """The `options:` line's `-o` flags, as a shell splits them, back into a dict."""
    line = next(line for line in done_stdout.splitlines() if line.startswith("options: "))
    words = shlex.split(line.removeprefix("options: "))
    assert words[::2] == ["-o"] * (len(words) // 2)
    pairs = [word.removeprefix(f"{adapter}.").partition("=") for word in words[1::2]]
    return {key: value for key, _, value in pairs}


def probe(adapter: str, options: dict[str, str], query: str) -> tuple[str, dict[str, str]]:
    flags = [part for key, value in options.items() for part in ("-o", f"{adapter}.{key}={value}")]
    done = run_cli("remote", "probe", adapter, "--query", query, *flags)
    assert done.returncode == 0, done.stderr
    return done.stdout, probed_options(done.stdout, adapter)


@pytest.mark.skipif(reference_server_missing() is not None, reason=str(reference_server_missing()))
def test_the_reference_memory_server_probed_then_evaluated(tmp_path: Path) -> None:
    from test_reference_memory_server import substring_reference

    dataset = load_dataset(str(EXAMPLE))
    memory_file = tmp_path / "memory.jsonl"  # the server's own file: one entity per memory
    memory_file.write_text("".join(json.dumps({"type": "entity", "name": memory.id, "entityType": "memory",
                                               "observations": [memory.content]}) + "\n" for memory in dataset.corpus))
    asked = {"command": reference_server_command(memory_file), "tool": "search_nodes",
             "search_arguments": '{"query": "{text}"}'}
    shown, found = probe("mcp", asked, "coffee")
    assert found == {"results": "entities", "id": "name", "score": ""}
    assert "entities[].observations" not in shown or "(not shown)" in shown
    for memory in dataset.corpus:
        assert memory.content not in shown
    result = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": {**asked, **found}}), dataset, k=10,
                           latency_sample=0, show_progress=False)
    memories = [(memory.id, memory.content) for memory in dataset.corpus]
    assert result.rankings() == {query.query_id: substring_reference(memories, query.text, 10)
                                 for query in dataset.queries}


def test_a_text_answering_service_probed_then_evaluated(tmp_path: Path) -> None:
    db = tmp_path / "db.jsonl"
    fill = {key: value for key, value in TEXT_OPTIONS.items() if key.startswith("add_")}
    run_benchmark(SystemSpec(retriever="mcp", options={"mcp": {"command": hash_command("--db", str(db)), **TEXT_OPTIONS}}),
                  load_dataset(str(EXAMPLE)), k=10, latency_sample=0, show_progress=False)  # the service now holds the store
    asked = {"command": hash_command("--db", str(db)), "tool": "retrieve_memory",
             "search_arguments": TEXT_OPTIONS["search_arguments"]}
    _, found = probe("mcp", asked, "coffee")
    assert set(found) == {"id_pattern", "score_pattern"}
    assert found["id_pattern"].startswith("Hash") and found["score_pattern"].startswith("Relevance Score")
    db.unlink()  # filled again from empty, through the probed reading
    options = {"command": hash_command("--db", str(db)), **asked, **found, **fill}
    result = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": options}), load_dataset(str(EXAMPLE)), k=10,
                           latency_sample=0, show_progress=False)
    same({query.query_id: list(zip(query.ranking, query.scores, strict=True)) for query in result.queries}, fts5_rankings())


def test_an_http_text_endpoint_probed_then_evaluated() -> None:
    with SearchServer(MemoryStore.from_dataset(str(EXAMPLE))) as server:
        url = server.url.replace("/search", "/search.txt")
        _, found = probe("http", {"url": url}, "coffee")
        assert set(found) == {"id_pattern", "score_pattern"}
        result = run_benchmark(SystemSpec(retriever="http", options={"http": {"url": url, **found}}),
                               load_dataset(str(EXAMPLE)), k=10, latency_sample=0, show_progress=False)
    same({query.query_id: list(zip(query.ranking, query.scores, strict=True)) for query in result.queries},
         fts5_rankings(content_only=False))


def test_an_unknown_adapter_and_an_empty_answer_are_one_line() -> None:
    done = run_cli("remote", "probe", "command", "--query", "x")
    assert done.returncode == 2 and "choose mcp or http" in done.stderr and "Traceback" not in done.stderr
    with SearchServer(MemoryStore()) as server:
        done = run_cli("remote", "probe", "http", "--query", "nothing", "-o", f"http.url={server.url}")
    # nothing to read: the answer's shape on stdout, the reason as one line on stderr, and exit 2
    assert done.returncode == 2 and "answered 1 part" in done.stdout, done
    assert done.stderr.strip().splitlines() == [
        "No list of hits with ids found: ask a query the system has memories for (--query)."]


def test_dash_q_is_an_old_spelling_of_query_noted_on_stderr() -> None:
    # -q is --per-query in eval and score: probe's -q still works for one release, with a note.
    with SearchServer(MemoryStore.from_dataset(str(EXAMPLE))) as server:
        done = run_cli("remote", "probe", "http", "-q", "coffee", "-o", f"http.url={server.url}")
    assert done.returncode == 0 and "options: " in done.stdout, done
    assert "recall-kit: probe -q is now --query (the old spelling goes in the next release)." in done.stderr
    assert "-q," not in run_cli("remote", "probe", "--help").stdout


def test_describe_reads_paths_orders_and_patterns() -> None:
    answer = {"data": {"matches": [{"doc": {"key": "a"}, "distance": 0.1, "text": "one two"},
                                   {"doc": {"key": "b"}, "distance": 0.4, "text": "three four"}]}}
    found = describe_json(answer)
    assert found.results == "data.matches" and found.ids[0][0] == "doc.key" and found.texts == ["text"]
    assert found.scores == [("distance", "ascending")]
    assert found.options("http") == ["-o http.results=data.matches", "-o http.id=doc.key", "-o http.score=distance",
                                     "-o http.score_order=ascending"]
    text = describe_text("1. [id: m-1] score=0.9 likes tea\n2. [id: m-2] score=0.5 likes coffee\n")
    assert text.ids[0][1] == "'m-1'" and text.scores[0][1] == "descending"  # the example as shown
