"""The `recall-kit graph-explain` command: why the graph leg returned what it did for one query."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def graph_explain(
    dataset: Annotated[Path, typer.Option("--dataset", "-d", help="Dataset folder.")],
    query_id: Annotated[str, typer.Option("--query-id", help="The query to explain.")],
    show_concepts: Annotated[bool, typer.Option("--show-concepts", help="Print concept names (they come from memory text).")] = False,
    k: Annotated[int, typer.Option("--k", "-k", help="How many memories to explain.")] = 10,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="graph.KEY=VALUE, as every command takes a leg's option: graph.method=ppr, graph.hops=3 (KEY=VALUE alone works too).")] = None,
) -> None:
    """Print, for one query, the graph path that led to each returned memory (ids only unless
    --show-concepts)."""
    from recall_kit.plugin import OptionError, RecallKitError, build_options, load_dataset
    from recall_kit_graph.retriever import GraphRetriever

    raw: dict[str, str] = {}
    for assignment in option or []:
        key, sep, value = assignment.partition("=")
        leg, dot, name = key.strip().rpartition(".")
        if not sep or not name or (dot and leg != "graph"):
            raise OptionError(f"Bad option {assignment!r}: graph-explain explains the graph leg: expected "
                              "graph.KEY=VALUE (e.g. -o graph.hops=3).")
        raw[name] = value
    if k < 1:
        raise OptionError(f"--k must be at least 1, got {k}.")
    options = build_options("retriever 'graph'", GraphRetriever.Options, raw)
    loaded = load_dataset(dataset)
    query = next((q for q in loaded.queries if q.query_id == query_id), None)
    if query is None:
        raise RecallKitError(f"No query {query_id!r} in {dataset}.")
    corpus = loaded.corpus
    if query.scope is not None and loaded.has_scopes:
        corpus = corpus.subset(lambda memory: memory.scope == query.scope)
    retriever = GraphRetriever(options)
    retriever.build_index(corpus)
    explained = retriever.explain(query.text, k, show_concepts=show_concepts)
    relevant = loaded.qrels.get(query.query_id, {})
    typer.echo(f"query {query.query_id} ({query.stratum}): {len(explained)} memories")
    for rank, hit in enumerate(explained, start=1):
        parts = []
        for step in hit.path:
            label = f"{step.node} [{step.concept}]" if step.concept is not None else step.node
            parts.append(label if step.edge == "query" else f"-{step.edge}-> {label}")
        grade = relevant.get(hit.id)
        mark = f" rel={grade}" if grade is not None else ""
        typer.echo(f"{rank:>3}. {hit.id}  {hit.score:.6f}{mark}  query -> " + " ".join(parts))
    retriever.close()
