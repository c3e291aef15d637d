"""The `graph` retriever: query concepts -> activation spread over typed edges -> memories."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from recall_kit.plugin import Corpus, Hit, Retriever, id_ranks, top_hits
from recall_kit_graph.normalise import query_ngrams

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where the graph is searched: registering this retriever runs for
# `recall-kit --help`, which must not pay for numpy.


@dataclass(frozen=True)
class PathStep:
    """One node of an explained path: a concept (`c<n>`, with its name) or a memory (its id),
    and the type of the edge that led to it (`query` for the seed concept)."""

    node: str
    edge: str
    concept: str | None = None


@dataclass(frozen=True)
class ExplainedHit:
    id: str
    score: float
    path: list[PathStep]


class GraphRetriever(Retriever):
    """Typed-relation concept graph: multi-hop recall over memories that share an entity."""

    description = "Concept graph over memories (typed relations); spreading activation or PPR."
    index_settings = frozenset({"edge_types"})  # distinct types per graph, not a count of edges

    @dataclass(frozen=True)
    class Options:
        #: `spread`: spreading activation for 2*hops-1 steps; `ppr`: personalised PageRank.
        method: Literal["spread", "ppr"] = "spread"
        #: How far a memory may be from the query's concepts, counted in memories (spread).
        hops: int = 2
        #: PageRank damping: the probability of following an edge rather than restarting.
        alpha: float = 0.85
        #: Activation kept per step of spreading (and per step of an explained path).
        decay: float = 0.5
        #: Per edge type weights over the defaults (mentions:1,tagged:1,related_to:0.5,...).
        edge_weights: dict[str, float] = field(default_factory=dict)
        #: Registered extractors to run, in order.
        extractors: tuple[str, ...] = ("rules",)
        #: Options of extractors that take their own (`llm`: `model:NAME,allow_remote:true`).
        extractor_options: dict[str, str] = field(default_factory=dict)
        #: A JSONL file of relation triples, for the `triples` extractor.
        triples: str | None = None
        #: difflib ratio threshold for fuzzy concept matching (None: exact names only).
        fuzzy: float | None = None
        #: A directory to persist the graph in (keyed by corpus fingerprint and options).
        path: str | None = None
        #: `conversation` extractor: a topic word in more than this share of the memories is
        #: left out (it bridges nothing).
        topic_max_share: float = 0.05
        #: A registered retriever (`bm25`, `dense`, ...) whose top `seed_depth` hits seed the
        #: walk as memory nodes, beside the query's concepts (None: concepts only).
        seed_retriever: str | None = None
        #: Options of the seed retriever, `key:value,key:value` (`stemming:true,stopwords:true`).
        seed_options: dict[str, str] = field(default_factory=dict)
        #: How many of the seed retriever's hits seed the walk (the r-th with weight 1/r).
        seed_depth: int = 10
        #: Share of the unit of activation on the seed memories (the rest on query concepts;
        #: all of it on the memories when the query names no concept).
        seed_share: float = 0.5

        def __post_init__(self) -> None:
            if self.hops < 1:
                raise ValueError("hops must be >= 1")
            if not 0.0 < self.alpha < 1.0:
                raise ValueError("alpha must be between 0 and 1 (exclusive)")
            if not 0.0 < self.decay <= 1.0:
                raise ValueError("decay must be in (0, 1]")
            if self.fuzzy is not None and not 0.0 < self.fuzzy <= 1.0:
                raise ValueError("fuzzy must be in (0, 1]")
            if any(not math.isfinite(w) or w < 0 for w in self.edge_weights.values()):
                raise ValueError("edge_weights must be finite and >= 0")
            if not self.extractors:
                raise ValueError("extractors must name at least one extractor")
            if not 0.0 < self.topic_max_share <= 1.0:
                raise ValueError("topic_max_share must be in (0, 1]")
            if self.seed_depth < 1:
                raise ValueError("seed_depth must be >= 1")
            if not 0.0 <= self.seed_share <= 1.0:
                raise ValueError("seed_share must be in [0, 1]")
            if self.seed_retriever == "graph":
                raise ValueError("seed_retriever cannot be 'graph' itself")
            if self.seed_options and not self.seed_retriever:
                raise ValueError("seed_options is set but seed_retriever is not")
            if self.triples and "triples" not in self.extractors:
                raise ValueError("triples is set but 'triples' is not in extractors "
                                 "(use extractors=rules,triples)")

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self.graph: Any = None
        self._transition: Any = None
        self._size: int | None = None
        self._persisted: Path | None = None
        self._names: list[str] = []
        self._seeder: Any = None
        self._memory_nodes: dict[str, int] = {}
        self._id_rank: np.ndarray | None = None  # recall_kit.id_ranks(graph.memory_ids): the tie order

    # --- building -------------------------------------------------------------------------------

    def build_index(self, corpus: Corpus) -> None:
        from recall_kit_graph.extractors import extractor_registry
        from recall_kit_graph.graph import ConceptGraph, build_graph
        from recall_kit_graph.scoring import transition_matrix

        registry = extractor_registry()
        extractors = [registry.get(name).obj(self.options) for name in self.options.extractors]
        target = None
        if self.options.path:
            key = hashlib.sha256(json.dumps({
                "corpus": corpus.fingerprint,
                "extractors": [[name, extractor.cache_key()] for name, extractor
                               in zip(self.options.extractors, extractors, strict=True)],
            }, sort_keys=True).encode()).hexdigest()[:24]
            target = Path(self.options.path).expanduser() / f"graph-{key}.json"
        graph = None
        if target is not None and target.exists():
            try:
                graph = ConceptGraph.from_json(target.read_bytes())
                if graph.memory_ids != list(corpus.ids):
                    raise ValueError("its memory ids differ from the corpus")
            except (ValueError, KeyError, TypeError, OSError, RecursionError) as error:
                # A stale or damaged file is rebuilt and replaced, and the user told why.
                print(f"recall-kit-graph: the graph at {target} failed its check "
                      f"({type(error).__name__}: {str(error)[:120]}); rebuilding it.", file=sys.stderr)
                graph = None
        if graph is None:
            graph = build_graph(corpus, (fact for extractor in extractors
                                         for fact in extractor.extract(corpus)))
            if target is not None:
                from recall_kit.plugin import atomic_open

                with atomic_open(target, "wb", private=True) as stream:  # it holds memory text
                    stream.write(graph.to_json())
        self.graph = graph
        self._persisted = target
        self._size = None
        self._transition = transition_matrix(graph, graph.type_weights(self.options.edge_weights))
        self._names = list(graph.concepts)
        self._memory_nodes = {memory_id: i for i, memory_id in enumerate(graph.memory_ids)}
        self._id_rank = id_ranks(graph.memory_ids)
        self._seeder = self._build_seeder(corpus)

    def _build_seeder(self, corpus: Corpus) -> Any:
        """The seed retriever, built over the same corpus (None without `seed_retriever`)."""
        name = self.options.seed_retriever
        if not name:
            return None
        from recall_kit.plugin import build_retriever

        # Made as the host makes a leg: the registry lookup, the option checks and the adapter for
        # retrieve()-only classes are the host's.
        seeder = build_retriever(name, dict(self.options.seed_options))
        seeder.build_index(corpus)
        return seeder

    def index_size_bytes(self) -> int | None:
        if self.graph is None:
            return None
        if self._persisted is not None and self._persisted.exists():
            return os.path.getsize(self._persisted)
        if self._size is None:
            self._size = len(self.graph.to_json())
        return self._size

    def index_stats(self) -> dict[str, Any]:
        return {} if self.graph is None else self.graph.stats()

    # --- querying -------------------------------------------------------------------------------

    def query_seeds(self, query: str) -> dict[int, float]:
        """The concept nodes a query names (by normalised n-gram, or fuzzily), with weights
        summing to 1 (each matched concept an equal share; a fuzzy match its ratio's share)."""
        graph = self.graph
        matched: dict[int, float] = {}
        unmatched = []
        for name in query_ngrams(query):
            node = graph.concept_node(name)
            if node is not None and graph.concept_kinds[node - graph.memory_count] not in ("scope", "session"):
                matched[node] = 1.0
            elif len(name) >= 4:
                unmatched.append(name)
        if self.options.fuzzy is not None and unmatched:
            import difflib

            for name in unmatched:
                for close in difflib.get_close_matches(name, self._names, n=3, cutoff=self.options.fuzzy):
                    node = graph.concept_node(close)
                    if node is not None and node not in matched:
                        ratio = difflib.SequenceMatcher(None, name, close).ratio()
                        matched[node] = max(matched.get(node, 0.0), ratio)
        total = sum(matched.values())
        return {node: weight / total for node, weight in matched.items()} if total else {}

    def _with_memory_seeds(self, queries: Sequence[str], seed_maps: list[dict[int, float]]) -> list[dict[int, float]]:
        """Each query's concept seeds scaled to 1 - seed_share, plus the seed retriever's top
        `seed_depth` memories sharing seed_share in proportion to 1/rank."""
        index = self._memory_nodes
        answers = self._seeder.search_many(list(queries), self.options.seed_depth)
        share = self.options.seed_share
        combined = []
        for concepts, hits in zip(seed_maps, answers, strict=True):
            memories: dict[int, float] = {}
            for rank, hit in enumerate(hits[: self.options.seed_depth], start=1):
                node = index.get(str(getattr(hit, "id", hit)))
                if node is not None and node not in memories:
                    memories[node] = 1.0 / rank
            total = sum(memories.values())
            if not memories:
                combined.append(concepts)
                continue
            memory_share = share if concepts else 1.0
            seeds = {node: weight * (1.0 - memory_share) for node, weight in concepts.items()}
            for node, weight in memories.items():
                seeds[node] = seeds.get(node, 0.0) + memory_share * weight / total
            combined.append({node: weight for node, weight in seeds.items() if weight > 0})
        return combined

    def _scores(self, seed_maps: Sequence[dict[int, float]]) -> np.ndarray:
        """(memories, queries) scores for each query's seeds."""
        import numpy as np

        from recall_kit_graph.scoring import personalized_pagerank, spreading_activation

        n = self.graph.node_count
        seeds = np.zeros((n, len(seed_maps)))
        for column, seed_map in enumerate(seed_maps):
            for node, weight in seed_map.items():
                seeds[node, column] = weight
        if self.options.method == "ppr":
            scores = personalized_pagerank(self._transition, seeds, alpha=self.options.alpha)
            scores[:, ~seeds.any(axis=0)] = 0.0
        else:
            scores = spreading_activation(
                self._transition, seeds, steps=2 * self.options.hops - 1, decay=self.options.decay
            )
        return scores[: self.graph.memory_count]

    def _top(self, column: np.ndarray, k: int) -> list[Hit]:
        """The best `k` memories scoring above 0, in sort_hits order (every memory tied with the
        k-th at float32 precision kept until the ids decide, as trec_eval orders them)."""
        import numpy as np

        positive = np.flatnonzero(column > 0)
        return top_hits(column[positive], self.graph.memory_ids, k, self._id_rank, candidates=positive)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if self.graph is None:
            raise RuntimeError("build_index must be called before search")
        if k <= 0 or not queries:
            return [[] for _ in queries]
        seed_maps = [self.query_seeds(query) for query in queries]
        if self._seeder is not None:
            seed_maps = self._with_memory_seeds(queries, seed_maps)
        results: list[list[Hit]] = [[] for _ in queries]
        active = [i for i, seeds in enumerate(seed_maps) if seeds]
        if not active:
            return results
        scores = self._scores([seed_maps[i] for i in active])
        for column, i in enumerate(active):
            results[i] = self._top(scores[:, column], k)
        return results

    def explain(self, query: str, k: int, show_concepts: bool = True) -> list[ExplainedHit]:
        """The hits of `search(query, k)`, each with the strongest path from a query concept to
        it (at most 2*hops-1 steps). Paths hold memory ids and concept ids (`c<n>`), and concept
        names, which come from memory text, unless `show_concepts` is False."""
        from recall_kit_graph.scoring import strongest_paths

        hits = self.search(query, k)
        seeds = self.query_seeds(query)
        graph = self.graph
        index = {memory_id: i for i, memory_id in enumerate(graph.memory_ids)}
        paths = strongest_paths(self._transition, seeds, [index[hit.id] for hit in hits],
                                steps=2 * self.options.hops - 1, decay=self.options.decay)
        edge_names = self._edge_names()
        explained = []
        for hit in hits:
            nodes = paths.get(index[hit.id], [])
            steps = []
            for position, node in enumerate(nodes):
                edge = "query" if position == 0 else edge_names.get((nodes[position - 1], node), "?")
                is_concept = node >= graph.memory_count
                steps.append(PathStep(
                    node=graph.node_label(node, show_concepts=False),
                    edge=edge,
                    concept=graph.node_label(node) if is_concept and show_concepts else None,
                ))
            explained.append(ExplainedHit(hit.id, hit.score, steps))
        return explained

    def _edge_names(self) -> dict[tuple[int, int], str]:
        """(u, v) -> the type of the heaviest edge between u and v (either direction)."""
        graph = self.graph
        weights = graph.type_weights(self.options.edge_weights)
        best: dict[tuple[int, int], tuple[float, str]] = {}
        for source, target, type_index in zip(graph.sources.tolist(), graph.targets.tolist(),
                                              graph.types.tolist(), strict=True):
            candidate = (float(weights[type_index]), graph.edge_types[type_index])
            for key in ((source, target), (target, source)):
                if key not in best or candidate > best[key]:
                    best[key] = candidate
        return {key: value[1] for key, value in best.items()}

    def close(self) -> None:
        if self._seeder is not None and hasattr(self._seeder, "close"):
            self._seeder.close()
        self._seeder = None
        self.graph = None
        self._transition = None
