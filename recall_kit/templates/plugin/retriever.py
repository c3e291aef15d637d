"""recall-kit-my-plugin: the `my-plugin` retriever for recall-kit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import Corpus, Hit, Register, Retriever, hookimpl, sort_hits

_WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    """The distinct case-folded words of `text`; quotes, operators and emoji are separators."""
    return set(_WORD.findall(text.casefold()))


class MyPluginRetriever(Retriever):
    """Scores a memory by the share of the query's distinct words it contains."""

    description = "share of the query's words a memory contains"

    @dataclass(frozen=True)
    class Options:
        #: Memories sharing fewer query words than this are not returned.
        min_shared: int = 1

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._index: list[tuple[str, set[str]]] = []

    def build_index(self, corpus: Corpus) -> None:
        self._index = [(memory.id, words(memory.searchable_text)) for memory in corpus]

    def search(self, query: str, k: int) -> list[Hit]:
        terms = words(query)
        if not terms:
            return []
        least = max(self.options.min_shared, 1)
        hits = [
            Hit(doc_id, len(terms & doc_words) / len(terms))
            for doc_id, doc_words in self._index
            if len(terms & doc_words) >= least
        ]
        return sort_hits(hits)[:k]  # best first, ties by id as trec_eval orders them

    def index_size_bytes(self) -> int | None:
        size = sum(len(word.encode("utf-8")) for _, doc_words in self._index for word in doc_words)
        return size or None


@hookimpl
def register_retrievers(register: Register) -> None:
    """Register the `my-plugin` retriever."""
    register("my-plugin", MyPluginRetriever)
