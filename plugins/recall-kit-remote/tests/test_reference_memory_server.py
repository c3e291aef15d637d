"""The reference MCP memory server (@modelcontextprotocol/server-memory, started from its npm
package over stdio): filled from the example store through `create_entities` by an argument
template, searched through `search_nodes` (a rank-only answer read by `entities[].name`), compared
with `fts5`, and listed through `read_graph` by the snapshot importer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from remote_helpers import EXAMPLE, reference_server_command, reference_server_missing, run_cli

from recall_kit import SystemSpec, load_dataset, load_result, run_benchmark

pytestmark = pytest.mark.skipif(reference_server_missing() is not None, reason=str(reference_server_missing()))

#: One entity per memory: its id as the entity's name, its text as the one observation.
CREATE_ENTITIES = '{"entities": [{"name": "{id}", "entityType": "memory", "observations": ["{content}"]}]}'


def reference_options(memory_file: Path, fill: bool) -> dict[str, str]:
    options = {"command": reference_server_command(memory_file), "tool": "search_nodes",
               "search_arguments": '{"query": "{text}"}', "results": "entities[].name", "score": ""}
    if fill:
        options |= {"add_tool": "create_entities", "add_arguments": CREATE_ENTITIES}
    return options


def substring_reference(memories: list[tuple[str, str]], query: str, k: int) -> list[str]:
    """What the server's search_nodes does, written again: every entity whose name, type or an
    observation holds the whole query (case-insensitive), in the order they were created."""
    asked = query.lower()
    return [doc for doc, text in memories if asked in doc.lower() or asked in "memory" or asked in text.lower()][:k]


def test_filled_through_create_entities_and_searched_rank_only(tmp_path: Path) -> None:
    dataset = load_dataset(str(EXAMPLE))
    remote = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": reference_options(tmp_path / "m.jsonl", True)}),
                           dataset, k=10, latency_sample=0, show_progress=False)
    memories = [(memory.id, memory.content) for memory in dataset.corpus]
    expected = {query.query_id: substring_reference(memories, query.text, 10) for query in dataset.queries}
    assert remote.rankings() == expected
    assert remote.outside_corpus["mcp"].hits == 0  # filled from the dataset: it holds nothing else
    stored = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert [entry["name"] for entry in stored] == [memory.id for memory in dataset.corpus]


def test_evaluated_and_compared_with_fts5_through_the_cli(tmp_path: Path) -> None:
    common = ["--dataset", str(EXAMPLE), "-k", "10", "--latency-sample", "0"]
    mcp_args = [f"-o mcp.{key}={value}" for key, value in reference_options(tmp_path / "m.jsonl", True).items()]
    flat = [part for arg in mcp_args for part in arg.split(" ", 1)]
    done = run_cli("eval", *common, "-r", "mcp", *flat, "--json", str(tmp_path / "mcp.json"))
    assert done.returncode == 0, done.stderr
    done = run_cli("eval", *common, "-r", "fts5", "--json", str(tmp_path / "fts5.json"))
    assert done.returncode == 0, done.stderr
    compared = run_cli("compare", str(tmp_path / "fts5.json"), str(tmp_path / "mcp.json"),
                       "--metrics", "recall@10,mrr", "--resamples", "1000")
    assert compared.returncode == 0, compared.stderr
    reference, fts5 = load_result(tmp_path / "mcp.json"), load_result(tmp_path / "fts5.json")
    found = sum(1 for ranking in reference.rankings().values() if ranking)
    assert f"{reference.mean('recall@10'):.4f}" in compared.stdout or f"{reference.mean('recall@10'):.3f}" in compared.stdout
    # A whole-query substring match finds a memory for few natural questions: fewer than fts5 does.
    assert found < sum(1 for ranking in fts5.rankings().values() if ranking)


def _store_file(path: Path, rows: list[dict[str, object]]) -> None:
    """A memory file in the server's own format: what a store in use already holds."""
    path.write_text("\n".join(json.dumps({"type": "entity", "name": str(row["id"]), "entityType": "memory",
                                          "observations": [row["content"]]}) for row in rows))


def test_snapshot_import_of_read_graph_agrees_with_the_service(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines() if line.strip()]
    sensitive = {str(row["id"]) for row in rows if row.get("is_sensitive")}
    canary = "CANARY-3f9e-sensitive"
    for row in rows:
        if str(row["id"]) in sensitive:
            row["content"] = f"{row['content']} {canary}"
    grown = [{"id": f"new-{n}", "content": f"added after the export, note {n}"} for n in range(5)]
    store = tmp_path / "store.jsonl"
    _store_file(store, rows + grown)  # the service holds everything: sensitive memories, newer ones
    source = tmp_path / "source"  # the example's queries and qrels, and one query naming a sensitive memory
    shutil.copytree(EXAMPLE, source)
    probe = next(row for row in rows if str(row["id"]) in sensitive)
    with (source / "queries.jsonl").open("a") as queries:
        queries.write(json.dumps({"query_id": "probe", "text": " ".join(probe["content"].split()[:3]), "stratum": "probe"}) + "\n")
    with (source / "qrels.jsonl").open("a") as qrels:
        qrels.write(json.dumps({"query_id": "probe", "relevant_ids": [rows[0]["id"]]}) + "\n")
    out = tmp_path / "snapshot"
    done = run_cli("dataset", "import", "mcp", str(source), str(out), "--command", reference_server_command(store))
    assert done.returncode == 0, done.stderr
    snapshot = load_dataset(str(out))
    assert {memory.id for memory in snapshot.corpus} == {str(row["id"]) for row in rows + grown} - sensitive
    assert snapshot.sensitive_ids == sensitive
    assert (out / "sensitive_ids.txt").read_text().split() == sorted(sensitive)
    assert not any(canary in path.read_text() for path in out.iterdir())
    assert canary not in done.stdout + done.stderr
    result = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": reference_options(store, False)}),
                           snapshot, k=10, latency_sample=0, show_progress=False)
    # Dataset and service agree: the only ids outside the corpus are the sensitive ones.
    outside = result.outside_corpus["mcp"]
    assert outside.hits == outside.sensitive_hits
    assert str(probe["id"]) in outside.sensitive["probe"]
    assert canary not in json.dumps(result.to_dict())


def test_scope_in_the_command_gives_each_scope_its_own_server_and_store(tmp_path: Path) -> None:
    from recall_kit.testing import write_scoped_dataset

    dataset = load_dataset(str(write_scoped_dataset(tmp_path / "scoped")))
    options = reference_options(tmp_path / "{scope}.jsonl", True)
    result = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": options}), dataset, k=5, latency_sample=0,
                           show_progress=False)
    for scope in ("alice", "bob"):
        names = [json.loads(line)["name"] for line in (tmp_path / f"{scope}.jsonl").read_text().splitlines()]
        assert names == [memory.id for memory in dataset.corpus if memory.scope == scope]
    assert result.outside_corpus["mcp"].hits == 0
