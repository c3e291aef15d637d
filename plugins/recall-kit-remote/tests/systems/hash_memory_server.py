"""An MCP memory service for the tests (stdio) that keeps memories under their own ids, content
hashes, and answers in formatted text, as memory services do:

    python hash_memory_server.py [--db FILE] [--preload-sensitive FOLDER]

Tools: `store_memory(content, tags)` answers "Memory stored (hash: <hash>)" and refuses the same
content twice ("Duplicate content", an error); `retrieve_memory(query, n_results)` answers each hit
as text ("Hash: ...", "Relevance Score: ...", the content); `list_memories(page, page_size)`
answers a page of at most 100 memories as JSON text, `{"memories": [{"content_hash", "content",
"metadata": {"sensitive"}}], "has_more"}`. `--db FILE` keeps the memories in a file (JSON
lines) from one start to the next. `--preload-sensitive FOLDER` holds the folder's sensitive
memories (its corpus.jsonl rows with `is_sensitive`) under their hashes, flagged sensitive in
their metadata: the user's own store, which holds what the dataset leaves out. `search_notes(query, limit)` answers JSON whose
scores ascend, as SQLite FTS5's bm25() does (lower is better): `{"results": [{"permalink",
"score"}]}`. Both searches rank as the `fts5` plugin does (the hash service's score is fts5's).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from typing import Any

#: The most memories one `list_memories` page holds, whatever is asked.
PAGE_LIMIT = 100


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:24]


def build_server(db: str | None, preload: str | None) -> Any:
    from mcp.server.mcpserver import MCPServer
    from memory_store import MemoryStore

    server = MCPServer("recall-kit test hash memory service")
    store = MemoryStore()
    rows: dict[str, dict[str, Any]] = {}

    def keep(content: str, tags: list[str], sensitive: bool, save: bool = True) -> str:
        digest = content_hash(content)
        if digest in rows:
            raise ValueError(f"Duplicate content detected (hash: {digest})")
        rows[digest] = {"content_hash": digest, "content": content, "tags": tags, "metadata": {"sensitive": sensitive}}
        store.add(digest, content)
        if db and save:
            with open(db, "a", encoding="utf-8") as saved:  # noqa: PTH123 - a path string
                saved.write(json.dumps(rows[digest]) + "\n")
        return digest

    if db and os.path.exists(db):  # noqa: PTH110 - a path string
        with open(db, encoding="utf-8") as saved:  # noqa: PTH123
            for line in saved:
                row = json.loads(line)
                keep(row["content"], row["tags"], row["metadata"]["sensitive"], save=False)
    if preload:
        with open(f"{preload}/corpus.jsonl", encoding="utf-8") as lines:  # noqa: PTH123 - a path string
            for line in lines:
                row = json.loads(line) if line.strip() else {}
                if row.get("is_sensitive") and content_hash(str(row["content"])) not in rows:
                    keep(str(row["content"]), list(row.get("tags") or []), True)

    @server.tool()
    def store_memory(content: str, tags: list[str] | None = None) -> str:
        """Store a memory; answer its hash."""
        digest = keep(content, list(tags or []), False)
        return f"Memory stored successfully (hash: {digest})"

    @server.tool()
    def retrieve_memory(query: str, n_results: int = 5) -> str:
        """Search the memories; each hit as text."""
        hits = store.search(query, n_results)
        if not hits:
            return "No matching memories found"
        blocks = [f"Found {len(hits)} memories:"]
        for rank, hit in enumerate(hits, start=1):
            blocks.append(f"Memory {rank}:\nContent: {rows[hit['id']]['content']}\nHash: {hit['id']}\n"
                          f"Relevance Score: {hit['score']!r}\n---")
        return "\n\n".join(blocks)

    @server.tool()
    def search_notes(query: str, limit: int = 10) -> dict[str, Any]:
        """Search the memories; JSON, scores ascending (lower is better, as FTS5's bm25())."""
        return {"results": [{"permalink": f"notes/{hit['id']}", "score": -hit["score"]}
                            for hit in store.search(query, limit)]}

    @server.tool()
    def list_memories(page: int = 1, page_size: int = 10) -> str:
        """A page of the stored memories, as JSON text."""
        size = max(1, min(page_size, PAGE_LIMIT))
        listed = list(rows.values())
        chosen = listed[(page - 1) * size: page * size]
        return json.dumps({"memories": chosen, "page": page, "has_more": page * size < len(listed)})

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", help="a file keeping the memories from one start to the next")
    parser.add_argument("--preload-sensitive", help="a dataset folder whose sensitive memories the service holds")
    arguments = parser.parse_args()
    build_server(arguments.db, arguments.preload_sensitive).run("stdio")


if __name__ == "__main__":
    main()
