"""The instruction prefixes that some embedding model families expect on queries and passages."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

BGE_QUERY = "Represent this sentence for searching relevant passages: "
BGE_ZH_QUERY = "为这个句子生成表示以用于检索相关文章："


@dataclass(frozen=True)
class Prefixes:
    """What is put before each query and each memory before embedding it, and why."""

    query: str
    document: str
    #: "bge", "e5", "nomic-embed", "model prompts", "none" or "option" (given by the user).
    source: str


def detect_prefixes(model_name: str, model_prompts: Mapping[str, str] | None = None) -> Prefixes:
    """The prefixes a model needs, from its name (a hub name or a folder path).

    - BGE (``BAAI/bge-*``, English v1/v1.5): query ``"Represent this sentence for searching
      relevant passages: "``, no passage prefix; the Chinese ``-zh`` models use their Chinese
      instruction; ``bge-m3`` needs none.
    - E5 (``intfloat/e5-*``, ``multilingual-e5-*``): ``"query: "`` / ``"passage: "``; the
      ``-instruct`` and ``e5-mistral`` models take task instructions instead and get none here.
    - nomic-embed (``nomic-ai/nomic-embed-text-*``): ``"search_query: "`` / ``"search_document: "``.
    - Otherwise the model's own ``prompts`` (``config_sentence_transformers.json``) named
      ``query`` and ``document`` (or ``passage``), when it declares them; else no prefixes.
    """
    name = model_name.lower().replace("\\", "/")
    if re.search(r"(^|[/_-])bge-", name) and "bge-m3" not in name and "reranker" not in name:
        query = BGE_ZH_QUERY if re.search(r"-zh($|[-/])", name) else BGE_QUERY
        return Prefixes(query, "", "bge")
    if re.search(r"(^|[/_-])e5-", name) and "mistral" not in name and "instruct" not in name:
        return Prefixes("query: ", "passage: ", "e5")
    if "nomic-embed" in name:
        return Prefixes("search_query: ", "search_document: ", "nomic-embed")
    prompts = dict(model_prompts or {})
    query = prompts.get("query", "")
    document = prompts.get("document", prompts.get("passage", ""))
    if query or document:
        return Prefixes(query, document, "model prompts")
    return Prefixes("", "", "none")


def resolve_prefixes(
    model_name: str,
    query_prefix: str | None,
    doc_prefix: str | None,
    model_prompts: Mapping[str, str] | None = None,
) -> Prefixes:
    """The detected prefixes, with either one replaced where the user gave it (``""`` turns it off)."""
    detected = detect_prefixes(model_name, model_prompts)
    if query_prefix is None and doc_prefix is None:
        return detected
    return Prefixes(
        detected.query if query_prefix is None else query_prefix,
        detected.document if doc_prefix is None else doc_prefix,
        "option",
    )
