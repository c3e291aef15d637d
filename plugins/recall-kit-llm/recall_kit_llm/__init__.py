"""recall-kit-llm: models through Simon Willison's `llm` library, the one door to every provider.

Registers the `llm-paraphrase` and `llm-multihop` query generators, the `llm` relevance judge
(`recall-kit judge --model NAME`), the `llm-embed` retriever (any `llm` embedding model) and,
when recall-kit-graph is installed, the `llm` relation extractor. `llm` is imported only when a
model is used.
"""

from __future__ import annotations

from recall_kit.plugin import Register, hookimpl

__version__ = "0.1.0"


@hookimpl
def register_query_generators(register: Register) -> None:
    from recall_kit_llm.generators import MultihopGenerator, ParaphraseGenerator

    register("llm-paraphrase", ParaphraseGenerator)
    register("llm-multihop", MultihopGenerator)


@hookimpl
def register_judges(register: Register) -> None:
    from recall_kit_llm.judge import LlmJudge

    register("llm", LlmJudge)


@hookimpl
def register_retrievers(register: Register) -> None:
    from recall_kit_llm.embed import LlmEmbedRetriever

    register("llm-embed", LlmEmbedRetriever)


# A hook of recall-kit-graph's: optional, so this plugin loads without the graph plugin too.
@hookimpl(optionalhook=True)
def register_extractors(register: Register) -> None:
    from recall_kit_llm.extractor import LlmExtractor

    register("llm", LlmExtractor)
