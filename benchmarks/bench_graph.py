"""Benchmark of the `graph` retriever (recall-kit-graph) on a synthetic corpus with entities.

Measures the index build over N memories (extraction + graph + sparse matrices) and the
single-query latency (p50, p95) of spreading activation and of personalised PageRank, and
prints the sparse PPR's speed against networkx.pagerank (the reference implementation) on the
same graph and the same queries, measured in this run.

    .venv/bin/python benchmarks/bench_graph.py [--memories 10000] [--queries 200] [--seed 0]

Targets (issue 6): build under 60 s at 10,000 memories; p50 under 20 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import recall_kit_graph
from recall_kit_graph.retriever import GraphRetriever

from recall_kit.testing import registered_plugin
from recall_kit.types import Corpus, Memory

SYLLABLES = ["ka", "lo", "mi", "ren", "tas", "vo", "qu", "bel", "dor", "fi", "zan", "ul", "pe", "shi"]
TOPICS = ["billing", "search", "ingest", "storage", "deploy", "metrics", "auth", "reporting",
          "backups", "alerts", "payments", "scheduling"]
FILLER = ["the", "team", "agreed", "last", "week", "that", "we", "should", "check", "again",
          "before", "release", "because", "latency", "was", "higher", "than", "expected"]


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


def synthetic_corpus(memories: int, seed: int) -> tuple[Corpus, list[str]]:
    """Memories about people, projects, tools and cities, with tags; and queries that name a
    person or a project (multi-hop: the answer sits in a memory about a related entity)."""
    rng = random.Random(seed)
    scale = max(1, memories // 10)
    people = sorted({f"{_name(rng, 2)} {_name(rng, 3)}" for _ in range(scale)})
    projects = sorted({_name(rng, 3) for _ in range(max(1, scale // 4))})
    tools = sorted({_name(rng, 2) + "DB" for _ in range(max(1, scale // 8))})
    cities = sorted({_name(rng, 2) + "ton" for _ in range(max(1, scale // 10))})
    rows = []
    for i in range(memories):
        person, project = rng.choice(people), rng.choice(projects)
        tool, city, topic = rng.choice(tools), rng.choice(cities), rng.choice(TOPICS)
        template = rng.randrange(5)
        if template == 0:
            text = f"{person} works on {project} and owns the {topic} pipeline."
        elif template == 1:
            text = f"{project} uses {tool} for {topic}; the cluster has {rng.randrange(2, 9)} nodes."
        elif template == 2:
            text = f"{person} is based in {city} and prefers mornings."
        elif template == 3:
            text = f"{project} depends on {rng.choice(projects)} for {topic}."
        else:
            text = f"Note about {project}: " + " ".join(rng.choice(FILLER) for _ in range(12)) + "."
        tags = ",".join(sorted({project.lower(), topic}))
        rows.append(Memory(str(i), text, tags=tuple(tags.split(",")),
                           expanded_keywords=f"{topic} {rng.choice(TOPICS)}",
                           created_at=f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"))
    queries = []
    for _ in range(1000):
        if rng.random() < 0.5:
            queries.append(f"Which database does {rng.choice(people).split()[0]}'s project use?")
        else:
            queries.append(f"Where do the people on {rng.choice(projects)} live?")
    return Corpus(rows), queries


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--reference-queries", type=int, default=5,
                        help="queries timed with networkx.pagerank (slow)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    corpus, queries = synthetic_corpus(args.memories, args.seed)
    queries = queries[: args.queries]
    with registered_plugin(recall_kit_graph, name="recall-kit-graph-bench"):
        results = {}
        for method in ("spread", "ppr"):
            retriever = GraphRetriever(GraphRetriever.Options(method=method))
            started = time.perf_counter()
            retriever.build_index(corpus)
            build = time.perf_counter() - started
            retriever.search(queries[0], 10)  # warm-up
            latencies = []
            found = 0
            for query in queries:
                started = time.perf_counter()
                hits = retriever.search(query, 10)
                latencies.append((time.perf_counter() - started) * 1000)
                found += bool(hits)
            results[method] = (retriever, build, latencies, found)
        retriever, build, _, _ = results["spread"]
        stats = retriever.index_stats()
        print(f"corpus: {len(corpus)} memories; graph: {stats['nodes']} nodes "
              f"({stats['concept_nodes']} concepts), {stats['edges']} edges, "
              f"{stats['edge_types']} edge types; serialised {retriever.index_size_bytes()} bytes")
        print(f"build (extraction + graph + matrices): {build:.2f} s  (target < 60 s)")
        for method, (_, _, latencies, found) in results.items():
            print(f"{method:>6}: p50 {statistics.median(latencies):.2f} ms, "
                  f"p95 {_percentile(latencies, 0.95):.2f} ms over {len(latencies)} queries "
                  f"({found} with hits)  (target p50 < 20 ms)")

        # The reference: networkx.pagerank with a personalization vector, same graph and weights.
        import networkx

        ppr = results["ppr"][0]
        graph = ppr.graph
        nx_graph = graph.to_networkx(ppr.options.edge_weights)
        reference_ms, ours_ms = [], []
        for query in queries[: args.reference_queries]:
            seeds = ppr.query_seeds(query)
            if not seeds:
                continue
            personalization = {graph.node_label(node, show_concepts=False): weight
                               for node, weight in seeds.items()}
            started = time.perf_counter()
            networkx.pagerank(nx_graph, alpha=ppr.options.alpha, personalization=personalization)
            reference_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            ppr.search(query, 10)
            ours_ms.append((time.perf_counter() - started) * 1000)
        if reference_ms:
            ref, ours = statistics.median(reference_ms), statistics.median(ours_ms)
            print(f"networkx.pagerank per query: p50 {ref:.1f} ms over {len(reference_ms)} queries; "
                  f"sparse PPR {ours:.2f} ms: {ref / ours:.0f}x faster")
        spread_p50 = statistics.median(results["spread"][2])
        ppr_p50 = statistics.median(results["ppr"][2])
        print(f"spread vs ppr p50: {ppr_p50 / spread_p50:.1f}x")


if __name__ == "__main__":
    main()
