"""The instruction-prefix table: which model names get which query and passage prefixes."""

from __future__ import annotations

import pytest
from recall_kit_dense.prefixes import BGE_QUERY, BGE_ZH_QUERY, detect_prefixes, resolve_prefixes


@pytest.mark.parametrize(
    ("name", "query", "document", "source"),
    [
        ("BAAI/bge-small-en-v1.5", BGE_QUERY, "", "bge"),
        ("BAAI/bge-large-en", BGE_QUERY, "", "bge"),
        ("/models/bge-base-en-v1.5", BGE_QUERY, "", "bge"),
        ("BAAI/bge-small-zh-v1.5", BGE_ZH_QUERY, "", "bge"),
        ("BAAI/bge-m3", "", "", "none"),
        ("BAAI/bge-reranker-base", "", "", "none"),
        ("intfloat/e5-small-v2", "query: ", "passage: ", "e5"),
        ("intfloat/multilingual-e5-base", "query: ", "passage: ", "e5"),
        ("intfloat/multilingual-e5-large-instruct", "", "", "none"),
        ("intfloat/e5-mistral-7b-instruct", "", "", "none"),
        ("nomic-ai/nomic-embed-text-v1.5", "search_query: ", "search_document: ", "nomic-embed"),
        ("sentence-transformers/all-MiniLM-L6-v2", "", "", "none"),
        ("sentence-transformers/all-mpnet-base-v2", "", "", "none"),
        # Words that merely contain the letters are not families.
        ("acme/vibe-embedder", "", "", "none"),
        ("acme/be5-model", "", "", "none"),
    ],
)
def test_detected_from_the_model_name(name: str, query: str, document: str, source: str) -> None:
    prefixes = detect_prefixes(name)
    assert (prefixes.query, prefixes.document, prefixes.source) == (query, document, source)


def test_a_models_own_prompts_are_used_when_the_name_says_nothing() -> None:
    prefixes = detect_prefixes("acme/custom", {"query": "Q: ", "document": "D: "})
    assert (prefixes.query, prefixes.document, prefixes.source) == ("Q: ", "D: ", "model prompts")
    prefixes = detect_prefixes("acme/custom", {"query": "Q: ", "passage": "P: "})
    assert prefixes.document == "P: "
    # A known family wins over the model's prompts.
    assert detect_prefixes("intfloat/e5-base", {"query": "Q: "}).query == "query: "


def test_options_replace_either_prefix_and_empty_turns_it_off() -> None:
    both = resolve_prefixes("intfloat/e5-small-v2", None, None)
    assert (both.query, both.document, both.source) == ("query: ", "passage: ", "e5")
    query_off = resolve_prefixes("intfloat/e5-small-v2", "", None)
    assert (query_off.query, query_off.document, query_off.source) == ("", "passage: ", "option")
    custom = resolve_prefixes("acme/model", "find: ", "doc: ")
    assert (custom.query, custom.document) == ("find: ", "doc: ")
