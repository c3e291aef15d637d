"""The concept graph: memory and concept nodes joined by typed edges, as compact arrays that
serialise to JSON and convert to networkx; built once per index from extractor facts."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from recall_kit.plugin import Corpus
from recall_kit_graph.extractors import Fact, Mention, Relation, normalise_relation
from recall_kit_graph.normalise import normalise_concept

FORMAT = "recall-kit-graph/2"  # 2: the body is wrapped with its sha256 checksum

#: Edge types the graph builds itself, with their default weights (`edge_weights` overrides).
DEFAULT_EDGE_WEIGHTS: dict[str, float] = {
    "mentions": 1.0,
    "tagged": 1.0,
    "uses": 1.0,
    "part_of": 1.0,
    "is_a": 1.0,
    "works_on": 1.0,
    "works_at": 1.0,
    "located_in": 1.0,
    "depends_on": 1.0,
    "decided": 1.0,
    "related_to": 0.5,
    "follows": 0.25,
    "said_by": 0.1,
    "same_session": 0.1,
    "same_scope": 0.1,
}
#: Weight of a relation type the defaults do not name (one from a triples file).
OTHER_RELATION_WEIGHT = 1.0


def _canonical_json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass
class ConceptGraph:
    """Nodes 0..M-1 are memories (in corpus order), M.. are concepts.

    Each edge is stored once as (source, target, type index); it is traversed both ways. For a
    relation the source is the head. Concept names come from memory text: they are shown only
    when a caller asks for them (explain), never in stats or logs.
    """

    memory_ids: list[str]
    concepts: list[str]
    concept_kinds: list[str]
    edge_types: list[str]
    sources: np.ndarray
    targets: np.ndarray
    types: np.ndarray
    _concept_index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self._concept_index:
            self._concept_index = {name: i for i, name in enumerate(self.concepts)}

    @property
    def memory_count(self) -> int:
        return len(self.memory_ids)

    @property
    def node_count(self) -> int:
        return len(self.memory_ids) + len(self.concepts)

    @property
    def edge_count(self) -> int:
        return int(self.sources.shape[0])

    def concept_node(self, name: str) -> int | None:
        """The node index of a (normalised) concept name, or None."""
        index = self._concept_index.get(name)
        return None if index is None else self.memory_count + index

    def node_label(self, node: int, show_concepts: bool = True) -> str:
        """`m:<memory id>`, or `c<n>` / the concept's name for a concept node."""
        if node < self.memory_count:
            return f"m:{self.memory_ids[node]}"
        index = node - self.memory_count
        return self.concepts[index] if show_concepts else f"c{index}"

    def stats(self) -> dict[str, Any]:
        """Counts only: nodes, edges and edges per built-in type (others summed as `other`)."""
        counts: list[int] = np.bincount(self.types, minlength=len(self.edge_types)).tolist()
        by_type: dict[str, int] = {}
        for name, count in zip(self.edge_types, counts, strict=False):
            key = name if name in DEFAULT_EDGE_WEIGHTS else "other"
            by_type[key] = by_type.get(key, 0) + int(count)
        return {
            "nodes": self.node_count,
            "memory_nodes": self.memory_count,
            "concept_nodes": len(self.concepts),
            "edges": self.edge_count,
            "edge_types": sum(1 for count in counts if count),
            "edges_by_type": by_type,
        }

    def type_weights(self, overrides: Mapping[str, float]) -> np.ndarray:
        """The weight of each edge type: `overrides`, else the default, else 1.0."""
        weights = {**DEFAULT_EDGE_WEIGHTS, **overrides}
        return np.array(
            [weights.get(name, OTHER_RELATION_WEIGHT) for name in self.edge_types], dtype=np.float64
        )

    # --- serialisation ------------------------------------------------------------------------

    def to_json(self) -> bytes:
        data = {
            "format": FORMAT,
            "memory_ids": self.memory_ids,
            "concepts": self.concepts,
            "concept_kinds": self.concept_kinds,
            "edge_types": self.edge_types,
            "sources": self.sources.tolist(),
            "targets": self.targets.tolist(),
            "types": self.types.tolist(),
        }
        body = _canonical_json(data)
        checksum = hashlib.sha256(body).hexdigest()
        return b'{"checksum":"' + checksum.encode("ascii") + b'","graph":' + body + b"}"

    @classmethod
    def from_json(cls, raw: bytes) -> ConceptGraph:
        """Read a graph written by `to_json`; ValueError when it is not one, or its checksum (or its
        edge bounds) says it was changed since it was written."""
        outer = json.loads(raw)
        if not isinstance(outer, dict) or not isinstance(outer.get("graph"), dict):
            raise ValueError(f"not a {FORMAT} graph")
        data = outer["graph"]
        if data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} graph")
        if hashlib.sha256(_canonical_json(data)).hexdigest() != outer.get("checksum"):
            raise ValueError("checksum mismatch: the file was changed after it was written")
        nodes = len(data["memory_ids"]) + len(data["concepts"])
        for key in ("sources", "targets"):
            if any(not 0 <= node < nodes for node in data[key]):
                raise ValueError(f"{key} out of range")
        if any(not 0 <= kind < len(data["edge_types"]) for kind in data["types"]):
            raise ValueError("edge types out of range")
        return cls(
            memory_ids=list(data["memory_ids"]),
            concepts=list(data["concepts"]),
            concept_kinds=list(data["concept_kinds"]),
            edge_types=list(data["edge_types"]),
            sources=np.asarray(data["sources"], dtype=np.int64),
            targets=np.asarray(data["targets"], dtype=np.int64),
            types=np.asarray(data["types"], dtype=np.int64),
        )

    def to_networkx(self, edge_weights: Mapping[str, float] | None = None) -> Any:
        """A networkx MultiDiGraph with both directions of every edge; `weight` is the edge
        type's weight, `type` its name. Nodes are `m:<id>` and `c<n>` labels."""
        import networkx as nx

        weights = self.type_weights(edge_weights or {})
        graph = nx.MultiDiGraph()
        graph.add_nodes_from(self.node_label(node, show_concepts=False) for node in range(self.node_count))
        for source, target, type_index in zip(self.sources, self.targets, self.types, strict=True):
            u = self.node_label(int(source), show_concepts=False)
            v = self.node_label(int(target), show_concepts=False)
            attributes = {"type": self.edge_types[type_index], "weight": float(weights[type_index])}
            graph.add_edge(u, v, **attributes)
            graph.add_edge(v, u, **attributes)
        return graph


def build_graph(corpus: Corpus, facts: Iterable[Fact]) -> ConceptGraph:
    """Build the graph of `corpus` from extractor facts, plus `follows` (consecutive memories
    of one scope by created_at), `same_scope` (memory -> its scope's node) and, for memories
    with a `session` field, `same_session` (memory -> its session's node) edges."""
    memory_ids = [memory.id for memory in corpus]
    memory_index = {memory_id: i for i, memory_id in enumerate(memory_ids)}
    concepts: dict[str, int] = {}
    kinds: list[str] = []
    edge_types: dict[str, int] = {}
    edges: set[tuple[int, int, int]] = set()
    memory_count = len(memory_ids)

    def concept(name: str, kind: str, raw: bool = False) -> int | None:
        normalised = name if raw else normalise_concept(name)
        if not normalised:
            return None
        index = concepts.get(normalised)
        if index is None:
            index = concepts[normalised] = len(kinds)
            kinds.append(kind)
        return memory_count + index

    def edge_type(name: str) -> int:
        return edge_types.setdefault(name, len(edge_types))

    for fact in facts:
        if isinstance(fact, Mention):
            memory = memory_index.get(fact.memory_id)
            node = concept(fact.concept, fact.kind)
            if memory is not None and node is not None:
                edges.add((memory, node, edge_type(fact.edge)))
        elif isinstance(fact, Relation):
            head = concept(fact.head, "relation")
            tail = concept(fact.tail, "relation")
            relation = normalise_relation(fact.relation)
            if head is not None and tail is not None and head != tail and relation:
                edges.add((head, tail, edge_type(relation)))
        else:
            raise TypeError(f"an extractor yielded {type(fact).__name__}; expected Mention or Relation")

    by_scope: dict[str, list[tuple[str, int]]] = {}
    for i, row in enumerate(corpus):
        if row.scope is not None:
            by_scope.setdefault(row.scope, []).append((row.created_at or "", i))
    for i, row in enumerate(corpus):
        session = row.extra.get("session")
        if session is not None:
            node = concept(f"#session:{row.scope or ''}:{session}", "session", raw=True)
            if node is not None:
                edges.add((i, node, edge_type("same_session")))
    for scope, members in sorted(by_scope.items()):
        # A scope node is named by the scope id under a prefix no normalised name can have, so
        # no concept from text merges with it and no query matches it.
        scope_node = concept(f"#scope:{scope}", "scope", raw=True)
        for _, i in members:
            if scope_node is not None:
                edges.add((i, scope_node, edge_type("same_scope")))
        dated = sorted((created, i) for created, i in members if created)
        for (_, earlier), (_, later) in pairwise(dated):
            edges.add((later, earlier, edge_type("follows")))

    ordered = sorted(edges)
    array = np.asarray(ordered, dtype=np.int64).reshape(-1, 3)
    return ConceptGraph(
        memory_ids=memory_ids,
        concepts=list(concepts),
        concept_kinds=kinds,
        edge_types=list(edge_types),
        sources=array[:, 0].copy(),
        targets=array[:, 1].copy(),
        types=array[:, 2].copy(),
        _concept_index=dict(concepts),
    )
