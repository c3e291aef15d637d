"""Snapshot importers: a dataset whose corpus is what a live system lists (an MCP tool such as the
reference memory server's `read_graph`, or a REST list endpoint such as mem0's `get_all`), so
that the dataset and the service agree by construction. The queries and qrels come from SRC."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.plugin import DatasetError, Importer, OptionError, PluginRunError, load_dataset, read_jsonl
from recall_kit_remote.base import QueryFailed, as_hit_id, parse_json_object, select

SENSITIVE_IDS_FILE = "sensitive_ids.txt"


@dataclass(frozen=True)
class ListingOptions:
    """Where the memories are in the listing the service answers, and where SRC's judgments are."""

    #: Path to the list of memories in the answer ("" for a bare list).
    memories: str = "results"
    #: Path to a memory's id in an entry.
    id: str = "id"
    #: Path to a memory's text in an entry (a list of strings, as `observations`, is joined by spaces).
    content: str = "content"
    #: Path to a memory's scope (a user or conversation) in an entry (empty: none).
    scope: str = ""
    #: Path to a flag in an entry marking the memory sensitive (empty: none).
    sensitive: str = ""


def _text(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return " ".join(value)
    return value if isinstance(value, str) else None


def _flag(value: Any) -> bool:
    return value is True or value == 1 or (isinstance(value, str) and value.strip().lower() in {"true", "yes", "1"})


def listing_rows(payload: Any, options: ListingOptions, counts: dict[str, int]) -> tuple[list[dict[str, Any]], set[str]]:
    """corpus.jsonl rows from a listing, and the ids of the entries flagged sensitive (their text is
    dropped here). Entries without an id or a text are dropped and counted."""
    try:
        entries = select(payload, options.memories)
    except QueryFailed as failure:
        raise DatasetError(f"The listing: {failure}.") from None
    if not isinstance(entries, list):
        raise DatasetError(f"The listing's {options.memories or 'answer'!r} is {type(entries).__name__}, not a list.")
    rows: list[dict[str, Any]] = []
    sensitive: set[str] = set()
    seen: set[str] = set()
    for entry in entries:
        try:
            memory_id = as_hit_id(select(entry, options.id))
            text = _text(select(entry, options.content))
        except QueryFailed:
            memory_id, text = None, None
        if memory_id is None or not text:
            counts["dropped_no_id_or_text"] = counts.get("dropped_no_id_or_text", 0) + 1
            continue
        if memory_id in seen:
            counts["dropped_duplicate_id"] = counts.get("dropped_duplicate_id", 0) + 1
            continue
        seen.add(memory_id)
        if options.sensitive and _flag(_optional(entry, options.sensitive)):
            sensitive.add(memory_id)
            continue
        row: dict[str, Any] = {"id": memory_id, "content": text}
        if options.scope and (scope := _optional(entry, options.scope)) is not None:
            row["scope"] = str(scope)
        rows.append(row)
    return rows, sensitive


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


def write_snapshot(payload: Any, options: ListingOptions, source: Path, destination: Path) -> dict[str, Any]:
    """The dataset: the listing's memories as corpus.jsonl (sensitive ones left out, their ids in
    sensitive_ids.txt), SRC's queries, and SRC's qrels cut to the ids the service holds."""
    for name in ("queries.jsonl", "qrels.jsonl"):
        if not (source / name).is_file():
            raise DatasetError(f"{source}: no {name} (SRC is a folder with the queries and qrels to score)")
    counts: dict[str, int] = {}
    rows, flagged = listing_rows(payload, options, counts)
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
    destination.mkdir(parents=True, exist_ok=True)
    _write_jsonl(destination / "corpus.jsonl", kept)
    _write_jsonl(destination / "queries.jsonl", [row for query_id, row in queries.items() if query_id in used])
    _write_jsonl(destination / "qrels.jsonl", qrels)
    if sensitive:
        (destination / SENSITIVE_IDS_FILE).write_text("".join(f"{doc}\n" for doc in sorted(sensitive)), encoding="utf-8")
    return {"memories": len(kept), "queries": len(used), "sensitive_ids": len(sensitive), "dropped": counts}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


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

    def run(self, source: Path, destination: Path) -> dict[str, Any]:
        from recall_kit_remote.mcp_tool import MCPSession, read_tool_answer

        options = self.options
        if bool(options.command) == bool(options.url):
            raise OptionError('The mcp importer needs one of --command "node server.js" or --url http://host:port/mcp.')
        session = MCPSession(options.command, options.url)
        try:
            result = session.call(options.tool, parse_json_object(options.arguments, "--arguments"), 120.0)
            payload = read_tool_answer(result, lambda payload: (select(payload, options.memories), payload)[1])
        except QueryFailed as failure:
            raise PluginRunError(f"{session.where}: tool {options.tool!r}: {failure}.") from None
        finally:
            session.close()
        return write_snapshot(payload, options, source, destination)


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
        if not options.url.startswith(("http://", "https://")):
            raise OptionError("The http importer needs --url http://host:port/path.")
        headers = {}
        if options.auth_env:
            value = os.environ.get(options.auth_env)
            if not value:
                raise OptionError(f"--auth-env names {options.auth_env!r}, which is not set in the environment.")
            headers["Authorization"] = f"Bearer {value}"
        try:
            response = httpx.get(options.url, headers=headers, timeout=120.0)
        except httpx.HTTPError as error:
            raise PluginRunError(f"Cannot list {options.url}: {type(error).__name__}.") from None
        if response.status_code >= 400:
            raise PluginRunError(f"{options.url} answered HTTP {response.status_code}.")
        try:
            payload = response.json()
        except ValueError:
            raise PluginRunError(f"{options.url} did not answer JSON.") from None
        return write_snapshot(payload, options, source, destination)
