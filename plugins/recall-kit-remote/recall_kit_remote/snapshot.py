"""Snapshot importers: a dataset whose corpus is what a live system lists (an MCP tool such as the
reference memory server's `read_graph`, or a REST list endpoint such as mem0's `get_all`), so
that the dataset and the service agree by construction. The queries and qrels come from SRC."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.plugin import (
    SENSITIVE_IDS_FILE,
    DatasetError,
    Importer,
    OptionError,
    PluginRunError,
    load_dataset,
    mask_secrets,
    read_jsonl,
)
from recall_kit_remote.base import QueryFailed, as_hit_id, check_url, is_flagged, parse_json_object, select
from recall_kit_remote.listing import ListingOptions, page_through, read_id_map


def _text(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return " ".join(value)
    return value if isinstance(value, str) else None


def listing_rows(entries: list[Any], options: ListingOptions, counts: dict[str, int],
                 to_dataset: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], set[str]]:
    """corpus.jsonl rows from a listing's entries, and the ids of the entries flagged sensitive
    (their text is dropped here), each id mapped by `to_dataset` (the server's -> the dataset's).
    Entries without an id or a text are dropped and counted."""
    to_dataset = to_dataset or {}
    rows: list[dict[str, Any]] = []
    sensitive: set[str] = set()
    seen: set[str] = set()
    for entry in entries:
        try:
            memory_id = as_hit_id(select(entry, options.id))
            text = _text(select(entry, options.content))
        except QueryFailed:
            memory_id, text = None, None
        if memory_id is not None and to_dataset:
            mapped = to_dataset.get(memory_id)
            counts["mapped_to_dataset_ids" if mapped else "kept_server_ids"] = counts.get(
                "mapped_to_dataset_ids" if mapped else "kept_server_ids", 0) + 1
            memory_id = mapped or memory_id
        if options.sensitive and memory_id is not None and _flagged(entry, options.sensitive, memory_id):
            sensitive.add(memory_id)
            seen.add(memory_id)
            continue
        if memory_id is None or not text:
            counts["dropped_no_id_or_text"] = counts.get("dropped_no_id_or_text", 0) + 1
            continue
        if memory_id in seen:
            counts["dropped_duplicate_id"] = counts.get("dropped_duplicate_id", 0) + 1
            continue
        seen.add(memory_id)
        row: dict[str, Any] = {"id": memory_id, "content": text}
        if options.scope and (scope := _optional(entry, options.scope)) is not None:
            row["scope"] = str(scope)
        rows.append(row)
    return rows, sensitive


def _flagged(entry: Any, path: str, memory_id: str) -> bool:
    """The entry's sensitive flag; one that cannot be read refuses the listing (never "not sensitive")."""
    try:
        return is_flagged(_optional(entry, path), f"memory {memory_id!r}")
    except QueryFailed as failure:
        raise DatasetError(f"the listing's {path!r}: {failure}") from None


def _optional(entry: Any, path: str) -> Any:
    try:
        return select(entry, path)
    except QueryFailed:
        return None


def _source_sensitive(source: Path) -> set[str]:
    """The sensitive ids SRC knows: its corpus.jsonl's flagged rows and its sensitive_ids.txt."""
    if not (source / "corpus.jsonl").exists():
        ids: set[str] = set()
        listed = source / SENSITIVE_IDS_FILE
        if listed.exists():
            ids = {line.split("#", 1)[0].strip() for line in listed.read_text(encoding="utf-8").splitlines()}
        return ids - {""}
    return set(load_dataset(source).sensitive_ids)


def write_snapshot(entries: list[Any], options: ListingOptions, source: Path, destination: Path) -> dict[str, Any]:
    """The dataset: the listing's memories as corpus.jsonl (sensitive ones left out, their ids in
    sensitive_ids.txt; the server's ids mapped to the dataset's by `id_map`), SRC's queries, and
    SRC's qrels cut to the ids the service holds."""
    for name in ("queries.jsonl", "qrels.jsonl"):
        if not (source / name).is_file():
            raise DatasetError(f"{source}: no {name} (SRC is a folder with the queries and qrels to score)")
    counts: dict[str, int] = {}
    to_dataset = read_id_map(options.id_map) if options.id_map else {}
    rows, flagged = listing_rows(entries, options, counts, to_dataset)
    sensitive = flagged | _source_sensitive(source)
    kept = [row for row in rows if row["id"] not in sensitive]
    counts["sensitive_left_out"] = len(flagged) + len(rows) - len(kept)
    held = {row["id"] for row in kept}
    queries = {str(row.get("query_id")): row for _, row in read_jsonl(source / "queries.jsonl")}
    qrels, used = [], set()
    for number, row in read_jsonl(source / "qrels.jsonl"):
        judged = row.get("relevance") or {str(doc): 1 for doc in row.get("relevant_ids") or []}
        if not isinstance(judged, dict):
            raise DatasetError(f"qrels.jsonl:{number}: needs \"relevant_ids\" or \"relevance\"")
        known = {str(doc): grade for doc, grade in judged.items() if str(doc) in held}
        counts["judgments_not_held"] = counts.get("judgments_not_held", 0) + len(judged) - len(known)
        query_id = str(row.get("query_id"))
        if known and query_id in queries:
            qrels.append({"query_id": query_id, "relevance": known})
            used.add(query_id)
    counts["queries_without_held_judgments"] = len(set(queries) - used)
    judgments = sum(len(row["relevance"]) for row in qrels)
    destination.mkdir(parents=True, exist_ok=True)
    _write_jsonl(destination / "corpus.jsonl", kept)
    _write_jsonl(destination / "queries.jsonl", [row for query_id, row in queries.items() if query_id in used])
    _write_jsonl(destination / "qrels.jsonl", qrels)
    if sensitive:
        (destination / SENSITIVE_IDS_FILE).write_text("".join(f"{doc}\n" for doc in sorted(sensitive)), encoding="utf-8")
    return {"memories": len(kept), "queries": len(used), "judgments": judgments, "listed": len(entries),
            "sensitive_ids": len(sensitive), "dropped": counts}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


#: A listing of a whole store in one message: 256 MiB (about 250,000 memories of 1 KiB).
SNAPSHOT_MAX_BYTES = 256 << 20


class MCPSnapshotImporter(Importer):
    """`dataset import mcp SRC OUT --command "..." --tool read_graph`: the corpus is what an MCP
    tool lists (defaults: the reference memory server's `read_graph`, each entity's `name` as the
    id and its `observations` as the text); the queries and qrels are SRC's."""

    description = "a live MCP memory server's own listing (read_graph) as the corpus; queries and qrels from SRC"

    @dataclass(frozen=True)
    class Options(ListingOptions):
        #: Start the server over stdio: its command line.
        command: str = ""
        #: Or connect over streamable HTTP.
        url: str = ""
        #: The tool that lists every memory.
        tool: str = "read_graph"
        #: The tool's arguments, a JSON object.
        arguments: str = ""
        memories: str = "entities"
        id: str = "name"
        content: str = "observations"
        #: The largest message read from the server, in bytes (a listing of the whole store may
        #: come as one): a larger one fails the import, never read whole.
        max_bytes: int = SNAPSHOT_MAX_BYTES

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        from recall_kit_remote.mcp_tool import MCPSession, read_tool_answer

        options = self.options
        if bool(options.command) == bool(options.url):
            raise OptionError('The mcp importer needs one of --command "node server.js" or --url http://host:port/mcp.')
        arguments = parse_json_object(options.arguments, "--arguments")
        session = MCPSession(options.command, options.url, max_bytes=options.max_bytes, cap_option="--max-bytes")

        def fetch(paging: dict[str, Any]) -> Any:
            try:
                result = session.call(options.tool, {**arguments, **paging}, 120.0)
                return read_tool_answer(result, lambda payload: (select(payload, options.memories), payload)[1])
            except QueryFailed as failure:
                raise PluginRunError(f"{session.where}: tool {options.tool!r}: {failure}.") from None

        try:
            entries = page_through(fetch, options)
        finally:
            session.close()
        return write_snapshot(entries, options, source, destination)


class HTTPSnapshotImporter(Importer):
    """`dataset import http SRC OUT --url http://host/memories`: the corpus is what a REST list
    endpoint answers (defaults: mem0's `get_all` shape, `{"results": [{"id", "memory", ...}]}`);
    the queries and qrels are SRC's."""

    description = "a live service's REST list endpoint (mem0 get_all) as the corpus; queries and qrels from SRC"

    @dataclass(frozen=True)
    class Options(ListingOptions):
        #: The list endpoint (GET), e.g. http://127.0.0.1:8000/memories?user_id=me.
        url: str = ""
        #: Name of the environment variable holding the Authorization header's value.
        auth_env: str = ""
        content: str = "memory"

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        import httpx

        options = self.options
        try:
            check_url(options.url, "--url")
        except ValueError as error:
            raise OptionError(f"The http importer: {error}.") from None
        headers = {}
        if options.auth_env:
            value = os.environ.get(options.auth_env)
            if not value:
                raise OptionError(f"--auth-env names {options.auth_env!r}, which is not set in the environment.")
            headers["Authorization"] = f"Bearer {value}"
        where = mask_secrets(options.url)

        def fetch(paging: dict[str, Any]) -> Any:
            try:
                response = httpx.get(options.url, params=paging, headers=headers, timeout=120.0)
            except httpx.HTTPError as error:
                raise PluginRunError(f"Cannot list {where}: {type(error).__name__}.") from None
            if response.status_code >= 400:
                raise PluginRunError(f"{where} answered HTTP {response.status_code}.")
            try:
                return response.json()
            except ValueError:
                raise PluginRunError(f"{where} did not answer JSON.") from None

        return write_snapshot(page_through(fetch, options), options, source, destination)
