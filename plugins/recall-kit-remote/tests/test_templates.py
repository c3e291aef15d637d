"""Argument and answer templates for every remote adapter: JSON templates for the add and search
calls, paths with `[]` into answers, rank-only answers, ids as strings or numbers, the server's own
ids mapped back; the REST snapshot importer (mem0's `get_all` shape); the scope hint."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from http_server import SearchServer
from memory_store import MemoryStore
from recall_kit_remote.base import QueryFailed, TextReading, fill_template, parse_template, read_hits
from remote_helpers import EXAMPLE, SYSTEMS, run_cli

from recall_kit import Hit, SystemSpec, load_dataset, run_benchmark
from recall_kit.plugin import OptionError
from recall_kit.testing import write_scoped_dataset

#: mem0's REST add call, one memory a message.
MEM0_ADD = '{"messages": [{"role": "user", "content": "{content}"}], "user_id": "{scope}"}'


def test_paths_with_arrays_rank_only_and_numeric_ids() -> None:
    graph = {"entities": [{"name": "b", "observations": []}, {"name": 7}, {"name": "3"}], "relations": []}
    assert read_hits(graph, "entities[].name", "id", "score") == [Hit("b", 1.0), Hit("7", 0.5), Hit("3", 1 / 3)]
    assert read_hits(graph, "entities", "name", "") == read_hits(graph, "entities[].name", "", "")
    nested = {"data": {"matches": [{"doc": {"key": 12}, "s": 0.5}]}}
    assert read_hits(nested, "data.matches", "doc.key", "s") == [Hit("12", 0.5)]
    with pytest.raises(QueryFailed, match="hit 1"):
        read_hits({"results": [{"id": 1.5}]}, "results", "id", "score")


def test_an_id_with_a_point_and_a_score_sent_as_text_are_refused_not_guessed() -> None:
    """Issue 72: an id 1.0 quietly became "1" (another memory than the server may mean), and a score
    "0.5" was read as a number; both are now a misread answer saying what is wrong."""
    with pytest.raises(QueryFailed, match=r"hit 2 has no string or integer 'id' \(a number with a point"):
        read_hits({"results": [{"id": 1, "score": 1.0}, {"id": 1.0, "score": 0.5}]}, "results", "id", "score")
    with pytest.raises(QueryFailed, match=r"hit 1 is not a string or integer id"):
        read_hits({"results": [2.0]}, "results", "id", "score")
    with pytest.raises(QueryFailed, match=r"hit 1's 'score' is text, not a JSON number"):
        read_hits({"results": [{"id": "a", "score": "0.5"}]}, "results", "id", "score")
    # a score read out of text by a pattern is text by design; an absent score is the rank's
    reading = TextReading(score_pattern=re.compile(r"([0-9.]+)"))
    assert read_hits({"results": [{"id": "a", "score": "s=0.5"}]}, "results", "id", "score", reading) == [Hit("a", 0.5)]
    assert read_hits({"results": [{"id": "a"}, {"id": "b"}]}, "results", "id", "score") == [Hit("a", 1.0), Hit("b", 0.5)]


def test_templates_fill_once_and_keep_types() -> None:
    template = json.loads('{"entities": [{"name": "{id}", "observations": ["{content}"], "tags": "{tags}", "n": "{k}"}]}')
    filled = fill_template(template, {"id": "1", "content": "note {k} and {id}", "tags": ["a"], "k": 5})
    assert filled == {"entities": [{"name": "1", "observations": ["note {k} and {id}"], "tags": ["a"], "n": 5}]}
    assert fill_template({"text": "{content} [tags: {tags}]"}, {"content": "x", "tags": ["a", "b"]}) == \
        {"text": "x [tags: a, b]"}  # inside a longer string the tags are joined, not a list's repr
    with pytest.raises(OptionError, match=r"\{txt\}"):
        parse_template('{"query": "{txt}"}', "mcp.search_arguments", frozenset({"text"}))


def test_command_request_template_and_answer_paths() -> None:
    """A program with its own line shapes: integer ids nested in objects, no scores, its own echo key."""
    dataset = load_dataset(str(EXAMPLE))
    program = f"{shlex.quote(sys.executable)} {shlex.quote(str(SYSTEMS / 'shaped_search.py'))} --dataset {EXAMPLE}"
    options = {"argv": program, "request": '{"ask": "{text}", "n": "{k}", "ref": "{query_id}"}',
               "results": "data.matches[].doc.key", "score": "", "answer_id": "ref"}
    remote = run_benchmark(SystemSpec(retriever="command", options={"command": options}), dataset, k=10,
                           latency_sample=3, show_progress=False)
    local = run_benchmark(SystemSpec(retriever="fts5"), dataset, k=10, latency_sample=0, show_progress=False)
    assert remote.rankings() == local.rankings()


def test_http_add_template_maps_the_servers_ids_back() -> None:
    """Filled like mem0's REST server: each memory POSTed as a message, the answer naming the id the
    server gave it (`results[].id`); the hits come back under the dataset's ids."""
    dataset = load_dataset(str(EXAMPLE))
    with SearchServer(MemoryStore()) as server:
        base = server.url.rsplit("/", 1)[0]
        options = {"url": server.url, "add_url": f"{base}/memories", "add_body": MEM0_ADD,
                   "add_result_id": "results[].id"}
        remote = run_benchmark(SystemSpec(retriever="http", options={"http": options}), dataset, k=10,
                               latency_sample=0, show_progress=False)
        assert server.added == len(dataset.corpus)
    local = run_benchmark(SystemSpec(retriever="fts5", options={"fts5": {"columns": ("content",)}}), dataset,
                          k=10, latency_sample=0, show_progress=False)
    assert remote.rankings() == local.rankings()
    assert remote.outside_corpus["http"].hits == 0


def test_http_snapshot_import_of_a_list_endpoint(tmp_path: Path) -> None:
    """mem0's get_all shape from a REST list endpoint: the corpus is what the service holds, its
    sensitive memories left out by id (from SRC's flags), SRC's queries and qrels kept."""
    with SearchServer(MemoryStore.from_store(str(EXAMPLE))) as server:
        base = server.url.rsplit("/", 1)[0]
        done = run_cli("dataset", "import", "http", str(EXAMPLE), str(tmp_path / "out"), "--url", f"{base}/memories")
    assert done.returncode == 0, done.stderr
    snapshot, example = load_dataset(str(tmp_path / "out")), load_dataset(str(EXAMPLE))
    assert {memory.id for memory in snapshot.corpus} == {memory.id for memory in example.corpus}
    assert snapshot.sensitive_ids == example.sensitive_ids
    assert snapshot.qrels == example.qrels


def test_scoped_data_with_every_answer_empty_hints_scope_param(tmp_path: Path) -> None:
    folder = write_scoped_dataset(tmp_path / "scoped")
    with SearchServer(MemoryStore.from_dataset(str(folder))) as server:
        result = run_benchmark(SystemSpec(retriever="http", options={"http": {"url": server.url}}),
                               load_dataset(str(folder)), k=5, latency_sample=0, show_progress=False)
    assert all(not ranking for ranking in result.rankings().values())
    assert any("Hint: the dataset has scopes and http.scope_param is unset" in warning for warning in result.warnings)
