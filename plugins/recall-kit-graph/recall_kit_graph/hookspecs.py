"""The hook specification recall-kit-graph adds to the host: `register_extractors`, and nothing else."""

from __future__ import annotations

import pluggy

from recall_kit.plugin import Register

hookspec = pluggy.HookspecMarker("recall_kit")


@hookspec
def register_extractors(register: Register) -> None:
    """Register concept/relation extractors for the ``graph`` retriever by name.

    Added to the plugin manager through the host's historic ``add_hookspecs`` hook by
    recall-kit-graph, so any plugin may implement it once recall-kit-graph is installed.

    :param register: call ``register(name, cls)`` once per extractor. ``cls`` is a subclass of
        :class:`recall_kit_graph.Extractor`: ``cls(options)`` receives the graph retriever's
        options and ``extract(corpus)`` yields ``Mention`` and ``Relation`` facts. Named by the
        retriever option ``extractors`` (``-o graph.extractors=rules,triples``).
    :returns: nothing; every implementation is called.
    """
