"""A small memory store for the tests: memories added one by one or loaded from a dataset folder,
searched with the `fts5` plugin's SQLite FTS5 query (so its rankings must equal the `fts5` leg's),
one index per scope. Behind it: `http_server.py`, `mcp_server.py` and `command_search.py`."""

from __future__ import annotations

import json
import threading
from typing import Any

from recall_kit_fts5 import FTS5Retriever

from recall_kit.plugin import Corpus, Memory, load_dataset


class MemoryStore:
    """Memories by scope; each scope's FTS5 index is (re)built on the first search after a change,
    one per serving thread (a SQLite connection belongs to the thread that opened it)."""

    def __init__(self) -> None:
        self._memories: dict[str | None, list[Memory]] = {}
        self._indexes: dict[tuple[str | None, int], FTS5Retriever] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_dataset(cls, folder: str) -> MemoryStore:
        store = cls()
        for memory in load_dataset(folder).corpus:
            store.add_memory(memory)
        return store

    @classmethod
    def from_store(cls, folder: str) -> MemoryStore:
        """Every row of the folder's corpus.jsonl, the sensitive ones too: what a production store
        holds (recall-kit's dataset leaves the sensitive ones out)."""
        store = cls()
        with open(f"{folder}/corpus.jsonl", encoding="utf-8") as rows:  # noqa: PTH123 - a path string
            for line in rows:
                if line.strip():
                    row = json.loads(line)
                    store.add(str(row["id"]), str(row["content"]), row.get("scope"))
        return store

    def add_memory(self, memory: Memory) -> None:
        with self._lock:
            self._memories.setdefault(memory.scope, []).append(memory)
            stale = [key for key in self._indexes if key[0] == memory.scope]
            for key in stale:  # closed by the garbage collector in the thread that owns it
                del self._indexes[key]

    def listing(self) -> list[tuple[str, str, str | None]]:
        """Every memory as (id, text, scope), in the order added."""
        with self._lock:
            return [(memory.id, memory.content, scope) for scope, memories in self._memories.items()
                    for memory in memories]

    def add(self, memory_id: str, content: str, scope: str | None = None) -> None:
        self.add_memory(Memory(id=str(memory_id), content=content, scope=scope))

    def search(self, query: str, k: int, scope: str | None = None) -> list[dict[str, Any]]:
        """The top k as `{"id", "score"}` dicts, best first (the fts5 leg's order and scores)."""
        key = (scope, threading.get_ident())
        with self._lock:
            index = self._indexes.get(key)
            memories = list(self._memories.get(scope, []))
        if index is None:
            index = FTS5Retriever()
            index.build_index(Corpus(memories))
            with self._lock:
                self._indexes[key] = index
        hits = index.search(query, k)
        return [{"id": hit.id, "score": hit.score} for hit in hits]
