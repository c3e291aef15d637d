"""`dataset import mcp|http` page through a listing (page numbers, offsets) and map the server's
ids to the dataset's with the id map a fill wrote (`mcp.id_map`), so the judgments survive; the
counts say how many memories and judgments were kept."""

from __future__ import annotations

import json
from pathlib import Path

from http_server import SearchServer
from memory_store import MemoryStore
from remote_helpers import EXAMPLE, run_cli
from test_text_answers import TEXT_OPTIONS, hash_command

from recall_kit import SystemSpec, load_dataset, run_benchmark


def test_a_hash_service_listed_page_by_page_with_the_id_map_keeps_every_judgment(tmp_path: Path) -> None:
    db, id_map = tmp_path / "db.jsonl", tmp_path / "ids.jsonl"
    example = load_dataset(str(EXAMPLE))
    options = {"command": hash_command("--db", str(db)), **TEXT_OPTIONS, "id_map": str(id_map)}
    run_benchmark(SystemSpec(retriever="mcp", options={"mcp": options}), example, k=10, latency_sample=0,
                  show_progress=False)
    mapped = [json.loads(line) for line in id_map.read_text().splitlines()]
    assert sorted(row["id"] for row in mapped) == sorted(memory.id for memory in example.corpus)
    out = tmp_path / "snapshot"
    listing = ["--command", hash_command("--db", str(db)), "--tool", "list_memories", "--memories", "memories",
               "--id", "content_hash", "--content", "content", "--paging", "page", "--page-arg", "page",
               "--page-size-arg", "page_size", "--page-size", "500"]  # the service gives at most 100 a page
    done = run_cli("dataset", "import", "mcp", str(EXAMPLE), str(out), *listing, "--id-map", str(id_map))
    assert done.returncode == 0, done.stderr
    snapshot = load_dataset(str(out))
    assert {memory.id for memory in snapshot.corpus} == {memory.id for memory in example.corpus}
    assert snapshot.qrels == example.qrels
    judgments = sum(len(grades) for grades in example.qrels.values())
    assert f"{judgments}" in done.stdout + done.stderr
    # Without the map every judgment drops: the service's ids are hashes.
    done = run_cli("dataset", "import", "mcp", str(EXAMPLE), str(tmp_path / "unmapped"), *listing)
    assert done.returncode != 0 or not (tmp_path / "unmapped" / "qrels.jsonl").read_text().strip()


def test_an_http_listing_paged_by_offset(tmp_path: Path) -> None:
    with SearchServer(MemoryStore.from_dataset(str(EXAMPLE))) as server:
        base = server.url.removesuffix("/search")
        done = run_cli("dataset", "import", "http", str(EXAMPLE), str(tmp_path / "out"), "--url", f"{base}/memories",
                       "--paging", "offset", "--page-arg", "offset", "--page-size-arg", "limit", "--page-size", "100")
    assert done.returncode == 0, done.stderr
    snapshot, example = load_dataset(str(tmp_path / "out")), load_dataset(str(EXAMPLE))
    assert len(example.corpus) > 300  # more than three pages of 100
    assert {memory.id for memory in snapshot.corpus} == {memory.id for memory in example.corpus}
    assert snapshot.qrels == example.qrels


def test_paging_without_its_argument_is_one_line(tmp_path: Path) -> None:
    done = run_cli("dataset", "import", "http", str(EXAMPLE), str(tmp_path / "out"), "--url", "http://127.0.0.1:9/m",
                   "--paging", "cursor")
    assert done.returncode == 2 and "--paging cursor needs --page-arg" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def test_an_unreadable_sensitive_flag_is_refused_never_read_as_not_sensitive() -> None:
    """A service's flag read as the host reads `is_sensitive`; one it cannot read ("maybe", [1]) is
    refused naming the memory, in a sensitive listing and in a snapshot (it let the row through)."""
    import pytest
    from recall_kit_remote.base import AnswerMisread, flagged_ids, is_flagged
    from recall_kit_remote.snapshot import _flagged

    from recall_kit.plugin import DatasetError

    assert is_flagged("YES", "m") and is_flagged(1, "m") and not is_flagged(None, "m") and not is_flagged("0", "m")
    for value in ("maybe", [1], {}):
        with pytest.raises(AnswerMisread, match="cannot be read"):
            is_flagged(value, "memory 'a'")
    listing = {"memories": "items", "id": "id", "flag": "flag"}
    assert flagged_ids({"items": [{"id": "a", "flag": True}, {"id": "b", "flag": False}]}, listing) == {"a"}
    with pytest.raises(AnswerMisread, match="memory 'b'"):
        flagged_ids({"items": [{"id": "a", "flag": True}, {"id": "b", "flag": "maybe"}]}, listing)
    with pytest.raises(DatasetError, match="memory 'c'.*'maybe' cannot be read"):
        _flagged({"id": "c", "is_sensitive": "maybe"}, "is_sensitive", "c")
