"""A memory service that answers in formatted text and keeps memories under its own ids (content
hashes), and a search whose scores ascend (lower is better): read with `mcp.id_pattern`,
`mcp.score_pattern`, `mcp.add_id_pattern` and `mcp.score_order`, no wrapper. Rankings must equal
the `fts5` leg's (the test service searches as fts5 does)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from hash_memory_server import content_hash
from remote_helpers import EXAMPLE, SYSTEMS, run_cli

from recall_kit import SystemSpec, load_dataset, load_result, run_benchmark
from recall_kit.plugin import PluginRunError

#: What docs/live-systems.md gives for this service (kept equal by test_docs_show_these_options).
TEXT_OPTIONS = {
    "tool": "retrieve_memory",
    "search_arguments": '{"query": "{text}", "n_results": "{k}"}',
    "id_pattern": "Hash: ([0-9a-f]+)",
    "score_pattern": "Relevance Score: (\\S+)",
    "add_tool": "store_memory",
    "add_arguments": '{"content": "{content}", "tags": "{tags}"}',
    "add_id_pattern": "hash: ([0-9a-f]+)",
}
ASCENDING_OPTIONS = {
    "tool": "search_notes",
    "search_arguments": '{"query": "{text}", "limit": "{k}"}',
    "results": "results",
    "id": "permalink",
    "id_pattern": "notes/(.+)",
    "score_order": "ascending",
    "add_tool": "store_memory",
    "add_arguments": '{"content": "{content}"}',
    "add_id_pattern": "hash: ([0-9a-f]+)",
}


def hash_command(*arguments: str) -> str:
    return shlex.join([sys.executable, str(SYSTEMS / "hash_memory_server.py"), *arguments])


def mcp_flags(options: dict[str, str]) -> list[str]:
    return [part for key, value in options.items() for part in ("-o", f"mcp.{key}={value}")]


def fts5_rankings(depth: int = 10, content_only: bool = True) -> dict[str, list[tuple[str, float]]]:
    """The fts5 leg over the content column (what the hash service indexes), or every field."""
    options = {"fts5": {"columns": ("content",)}} if content_only else {}
    result = run_benchmark(SystemSpec(retriever="fts5", options=options),
                           load_dataset(str(EXAMPLE)), k=depth, latency_sample=0, show_progress=False)
    return {query.query_id: list(zip(query.ranking, query.scores, strict=True)) for query in result.queries}


def remote_rankings(options: dict[str, str], depth: int = 10) -> dict[str, list[tuple[str, float]]]:
    result = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": options}), load_dataset(str(EXAMPLE)), k=depth,
                           latency_sample=0, show_progress=False)
    return {query.query_id: list(zip(query.ranking, query.scores, strict=True)) for query in result.queries}


def same(remote: dict[str, list[tuple[str, float]]], local: dict[str, list[tuple[str, float]]]) -> None:
    """The same scores, and the same ids in the same order above the last score; ids tied on the
    last score at the cut may differ (the service breaks ties by its own ids, hashes)."""
    assert remote.keys() == local.keys()
    for query_id, hits in local.items():
        assert [score for _, score in remote[query_id]] == pytest.approx([score for _, score in hits], rel=1e-6)
        last = hits[-1][1] if hits else None
        above = [doc for doc, score in hits if score != last]
        assert [doc for doc, _ in remote[query_id]][:len(above)] == above, query_id


def test_a_text_answering_service_filled_and_searched_equals_fts5(tmp_path: Path) -> None:
    same(remote_rankings({"command": hash_command(), **TEXT_OPTIONS}), fts5_rankings())


def test_an_ascending_score_search_equals_fts5(tmp_path: Path) -> None:
    same(remote_rankings({"command": hash_command(), **ASCENDING_OPTIONS}), fts5_rankings())


def test_ascending_scores_are_caught_before_the_fill_with_the_fix_named(tmp_path: Path) -> None:
    """Without mcp.score_order the run ends after the probe search that follows the first 20 adds,
    naming the option; the old run filled all 340 memories, then failed on the first query."""
    db = tmp_path / "db.jsonl"
    options = {**ASCENDING_OPTIONS, "command": hash_command("--db", str(db))}
    del options["score_order"]
    with pytest.raises(PluginRunError, match=r"ascend .*-o mcp\.score_order=ascending .*-o mcp\.score= "):
        remote_rankings(options)
    assert len(db.read_text().splitlines()) == 20


def test_a_text_answer_without_a_pattern_stops_after_three_queries_naming_the_option(tmp_path: Path) -> None:
    options = {key: value for key, value in TEXT_OPTIONS.items() if key not in ("id_pattern", "score_pattern")}
    options["command"] = hash_command()
    started = time.perf_counter()
    done = run_cli("eval", "--dataset", str(EXAMPLE), "-r", "mcp",
                   *mcp_flags(options), "--latency-sample", "0")
    elapsed = time.perf_counter() - started
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "mcp.id_pattern" in line]
    assert len(errors) == 1 and "3 answers in a row" in errors[0] and "remote probe" in errors[0]
    assert elapsed < 60  # three calls, not 120 queries x 3 tries


def test_a_failed_add_is_not_sent_again_and_its_own_cause_is_reported(tmp_path: Path) -> None:
    """The add answer is text, read through a JSON path: that failure is what the user sees, not
    the duplicate the server refuses when the add is sent again (as it was)."""
    db = tmp_path / "db.jsonl"
    options = {**TEXT_OPTIONS, "command": hash_command("--db", str(db)), "add_result_id": "hash"}
    del options["add_id_pattern"]
    with pytest.raises(PluginRunError, match="failed to add memory .*text.*add_id_pattern") as raised:
        remote_rankings(options)
    assert "Duplicate" not in str(raised.value) and "error" not in str(raised.value)
    assert len(db.read_text().splitlines()) == 1  # sent once


def test_sensitive_memories_under_the_services_own_ids_fail_the_run(tmp_path: Path) -> None:
    """The service already holds the user's sensitive memories, under its hashes; recall-kit fills
    the rest. Named by the service's listing flag, or by a file of its ids, each hit on one is a
    sensitive hit and --fail-on-sensitive exits 1; without either, nothing can tell."""
    command = hash_command("--preload-sensitive", str(EXAMPLE))
    flags = mcp_flags({**TEXT_OPTIONS, "command": command})
    listing = json.dumps({"tool": "list_memories", "memories": "memories", "id": "content_hash",
                          "flag": "metadata.sensitive", "paging": "page", "page_arg": "page",
                          "page_size_arg": "page_size", "page_size": 50})  # 7 pages of 50: paged through
    sensitive_rows = [json.loads(line) for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines()
                      if line.strip() and json.loads(line).get("is_sensitive")]
    hashes = tmp_path / "service_sensitive_ids.txt"
    hashes.write_text("".join(content_hash(row["content"]) + "\n" for row in sensitive_rows))
    counts = []
    for extra in (mcp_flags({"sensitive_listing": listing}), mcp_flags({"sensitive_ids": str(hashes)})):
        out = tmp_path / "result.json"
        done = run_cli("eval", "--dataset", str(EXAMPLE), "-r", "mcp", *flags, *extra, "--json", str(out),
                       "--latency-sample", "0", "--fail-on-sensitive")
        assert done.returncode == 1, done.stderr
        result = load_result(out)
        assert result.sensitive_hits > 0
        assert f"Failed: {result.sensitive_hits} sensitive memories surfaced (--fail-on-sensitive)." in done.stderr
        counts.append(result.outside_corpus["mcp"].sensitive)
        for row in sensitive_rows:
            assert row["content"] not in done.stderr + out.read_text()
    assert counts[0] == counts[1]
    done = run_cli("eval", "--dataset", str(EXAMPLE), "-r", "mcp", *flags, "--latency-sample", "0", "--fail-on-sensitive")
    assert done.returncode == 0, done.stderr  # the service's ids alone say nothing: it needs one of the two


def test_docs_show_these_options() -> None:
    """docs/live-systems.md gives, for both services, exactly the options these tests run."""
    from remote_helpers import ROOT

    page = (ROOT / "docs" / "live-systems.md").read_text()
    for options in (TEXT_OPTIONS, ASCENDING_OPTIONS):
        for key, value in options.items():
            assert f"-o mcp.{key}={value} " in page or f"-o mcp.{key}='{value}'" in page, (key, value)
