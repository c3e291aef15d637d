"""recall-kit-graph: a typed-relation concept graph retriever (`graph`) for multi-hop recall.

Registers the `graph` retriever, the `register_extractors` hook (through the host's
`add_hookspecs`) with the built-in `rules` and `triples` extractors, and the `graph-explain`
command. networkx and scipy are imported only when a graph is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_graph.conversation import ConversationExtractor
    from recall_kit_graph.extractors import (
        Extractor,
        Mention,
        Relation,
        RulesExtractor,
        TriplesExtractor,
    )
    from recall_kit_graph.normalise import normalise_concept
    from recall_kit_graph.retriever import GraphRetriever

__all__ = [
    "ConversationExtractor",
    "Extractor",
    "GraphRetriever",
    "Mention",
    "Relation",
    "RulesExtractor",
    "TriplesExtractor",
    "normalise_concept",
]
__version__ = "0.1.0"

# The public names, imported on first use: the host imports this module for every command,
# `recall-kit --help` included, and calls each hook only when it needs what the hook registers.
_LAZY = {
    "ConversationExtractor": "recall_kit_graph.conversation",
    "Extractor": "recall_kit_graph.extractors",
    "Mention": "recall_kit_graph.extractors",
    "Relation": "recall_kit_graph.extractors",
    "RulesExtractor": "recall_kit_graph.extractors",
    "TriplesExtractor": "recall_kit_graph.extractors",
    "normalise_concept": "recall_kit_graph.normalise",
    "GraphRetriever": "recall_kit_graph.retriever",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


@hookimpl
def add_hookspecs(plugin_manager: Any) -> None:
    from recall_kit_graph import hookspecs

    caller = getattr(plugin_manager.hook, "register_extractors", None)
    if caller is None or not caller.has_spec():  # registered again (tests) -> spec already there
        plugin_manager.add_hookspecs(hookspecs)


@hookimpl
def register_extractors(register: Register) -> None:
    from recall_kit_graph.conversation import ConversationExtractor
    from recall_kit_graph.extractors import RulesExtractor, TriplesExtractor

    register("rules", RulesExtractor)
    register("triples", TriplesExtractor)
    register("conversation", ConversationExtractor)


@hookimpl
def register_retrievers(register: Register) -> None:
    from recall_kit_graph.retriever import GraphRetriever

    register("graph", GraphRetriever)


@hookimpl
def register_commands(app: Any) -> None:
    from recall_kit_graph.cli import graph_explain

    app.command("graph-explain")(graph_explain)
