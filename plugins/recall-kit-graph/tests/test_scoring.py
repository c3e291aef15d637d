"""Scoring on a hand-built graph: spreading activation worked out by hand, PPR against networkx."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import networkx
import numpy as np
import pytest
import recall_kit_graph
from recall_kit_graph.extractors import Extractor, Fact, Mention, Relation
from recall_kit_graph.retriever import GraphRetriever
from recall_kit_graph.scoring import personalized_pagerank, transition_matrix

import recall_kit
from recall_kit.plugin import Corpus, Hit, Memory
from recall_kit.testing import registered_plugin


class HandExtractor(Extractor):
    """The facts of the hand-built graph:

        m0 -mentions- alpha     m0 -mentions- beta     m1 -tagged- beta
        gamma -uses-> delta     m3 -mentions- delta     (m2: no facts, a dangling node)
    """

    def extract(self, corpus: Corpus) -> Iterable[Fact]:
        yield Mention("0", "Alpha")
        yield Mention("0", "Beta")
        yield Mention("1", "beta", "tagged", "tag")
        yield Relation("Gamma", "uses", "Delta")
        yield Mention("3", "Delta")


class HandPlugin:
    @recall_kit.hookimpl
    def register_extractors(self, register):  # type: ignore[no-untyped-def]
        register("hand", HandExtractor)


CORPUS = Corpus([Memory(str(i), f"memory {i}") for i in range(4)])


@pytest.fixture()
def plugins() -> Iterator[None]:
    with (
        registered_plugin(recall_kit_graph, name="recall-kit-graph-test-scoring"),
        registered_plugin(HandPlugin(), name="hand-extractor-test-scoring"),
    ):
        yield


def _retriever(**options: object) -> GraphRetriever:
    retriever = GraphRetriever(GraphRetriever.Options(extractors=("hand",), **options))  # type: ignore[arg-type]
    retriever.build_index(CORPUS)
    return retriever


def test_two_hop_spreading_activation_by_hand(plugins: None) -> None:
    # Transition P (rows sum to 1), with `tagged` weighted 3:
    #   alpha -> m0: 1;  m0 -> alpha: 1/2, beta: 1/2;  beta -> m0: 1/4, m1: 3/4;  m1 -> beta: 1.
    # hops=2 is 3 steps, decay d = 1/2, seed alpha = 1:
    #   a1 = d * (m0: 1)                          = m0: 1/2
    #   a2 = d * (alpha: 1/4, beta: 1/4)          = alpha: 1/8, beta: 1/8
    #   a3 = d * (m0: 1/8 + 1/8 * 1/4, m1: 1/8 * 3/4) = m0: 5/64, m1: 3/64
    # m0 = 1/2 + 5/64 = 37/64;  m1 = 3/64. m2 and m3 are not reached (score 0: not returned).
    retriever = _retriever(edge_weights={"tagged": 3.0}, decay=0.5, hops=2)
    hits = retriever.search("What about alpha?", 10)
    assert [hit.id for hit in hits] == ["0", "1"]
    assert hits[0].score == pytest.approx(37 / 64)
    assert hits[1].score == pytest.approx(3 / 64)
    assert retriever.search("What about alpha?", 1) == [Hit("0", pytest.approx(37 / 64))]


def test_one_hop_reaches_only_direct_mentions(plugins: None) -> None:
    # hops=1 is one step: alpha -> m0 with d = 0.5.
    hits = _retriever(hops=1, decay=0.5).search("alpha", 10)
    assert hits == [Hit("0", pytest.approx(0.5))]


def test_relation_edges_carry_activation(plugins: None) -> None:
    # gamma -uses-> delta -mentions- m3. gamma's only neighbour is delta; delta's are gamma and
    # m3 (1/2 each). With d = 1/2 and hops=2 (3 steps): a1 = delta: 1/2; a2 = gamma: 1/8,
    # m3: 1/8; a3 = delta: 1/16 + 1/16 (back from gamma and m3), no memory. So m3 = 1/8.
    hits = _retriever(decay=0.5).search("gamma", 10)
    assert hits == [Hit("3", pytest.approx(0.125))]


def test_zero_weight_removes_an_edge_type(plugins: None) -> None:
    hits = _retriever(edge_weights={"uses": 0.0}).search("gamma", 10)
    assert hits == []


def test_query_with_no_concept_returns_nothing(plugins: None) -> None:
    assert _retriever().search("nothing known here", 10) == []


def test_equal_seeds_split_the_mass(plugins: None) -> None:
    # alpha and delta each seed 1/2; one step with d = 1/2: alpha sends all of its 1/2 to m0
    # (m0: 1/4), delta splits its 1/2 between gamma and m3 (m3: 1/8).
    hits = _retriever(hops=1, decay=0.5).search("alpha and delta", 10)
    assert hits == [Hit("0", pytest.approx(0.25)), Hit("3", pytest.approx(0.125))]


def test_fuzzy_matching_is_off_by_default(plugins: None) -> None:
    assert _retriever(hops=1).search("alphx", 10) == []
    hits = _retriever(hops=1, fuzzy=0.7, decay=0.5).search("alphx", 10)
    assert [hit.id for hit in hits] == ["0"]
    assert hits[0].score == pytest.approx(0.5)  # one fuzzy seed carries the whole mass


def test_ppr_matches_networkx_pagerank(plugins: None) -> None:
    weights = {"tagged": 3.0, "uses": 2.0}
    retriever = _retriever(edge_weights=weights)
    graph = retriever.graph
    transition = transition_matrix(graph, graph.type_weights(weights))
    seeds = np.zeros(graph.node_count)
    alpha_node = graph.concept_node("alpha")
    gamma_node = graph.concept_node("gamma")
    seeds[alpha_node] = 0.75
    seeds[gamma_node] = 0.25
    ours = personalized_pagerank(transition, seeds, alpha=0.85, max_iter=1000, tol=1e-13)
    nx_graph = graph.to_networkx(weights)
    def label(node):
        return graph.node_label(node, show_concepts=False)
    reference = networkx.pagerank(
        nx_graph, alpha=0.85, personalization={label(alpha_node): 0.75, label(gamma_node): 0.25},
        max_iter=1000, tol=1e-13, weight="weight",
    )
    assert ours.sum() == pytest.approx(1.0)
    for node in range(graph.node_count):
        assert ours[node] == pytest.approx(reference[label(node)], abs=1e-9)
    # m2 has no edges (dangling): it keeps only what the dangling mass sends back to seeds, 0.
    assert reference["m:2"] == pytest.approx(0.0, abs=1e-12)


def test_ppr_retriever_ranks_by_pagerank(plugins: None) -> None:
    retriever = _retriever(method="ppr", alpha=0.85)
    graph = retriever.graph
    reference = networkx.pagerank(
        graph.to_networkx(), alpha=0.85, personalization={f"c{graph.concept_node('alpha') - 4}": 1.0},
        tol=1e-10, max_iter=1000,
    )
    hits = retriever.search("alpha", 10)
    assert [hit.id for hit in hits] == ["0", "1"]  # m2, m3 unreachable from alpha: PPR 0
    assert hits[0].score == pytest.approx(reference["m:0"], rel=1e-4)
    assert hits[1].score == pytest.approx(reference["m:1"], rel=1e-4)


def test_search_many_equals_search(plugins: None) -> None:
    retriever = _retriever()
    queries = ["alpha", "nothing", "gamma", "beta delta"]
    assert retriever.search_many(queries, 3) == [retriever.search(q, 3) for q in queries]


def test_explain_gives_the_path(plugins: None) -> None:
    retriever = _retriever(edge_weights={"tagged": 3.0}, decay=0.5)
    explained = retriever.explain("alpha", 10)
    assert [hit.id for hit in explained] == ["0", "1"]
    graph = retriever.graph
    alpha, beta = (f"c{graph.concept_node(name) - graph.memory_count}" for name in ("alpha", "beta"))
    path = [(step.node, step.edge, step.concept) for step in explained[1].path]
    assert path == [
        (alpha, "query", "alpha"),
        ("m:0", "mentions", None),
        (beta, "mentions", "beta"),
        ("m:1", "tagged", None),
    ]
    hidden = retriever.explain("alpha", 10, show_concepts=False)
    assert all(step.concept is None for hit in hidden for step in hit.path)
    assert [step.node for step in hidden[1].path] == [alpha, "m:0", beta, "m:1"]


def test_index_stats_are_counts(plugins: None) -> None:
    stats = _retriever().index_stats()
    assert stats == {
        "nodes": 8,  # 4 memories + alpha, beta, gamma, delta
        "memory_nodes": 4,
        "concept_nodes": 4,
        "edges": 5,
        "edge_types": 3,
        "edges_by_type": {"mentions": 3, "tagged": 1, "uses": 1},
    }


def test_persisted_graph_is_reused(plugins: None, tmp_path: Path) -> None:
    first = _retriever(path=str(tmp_path))
    files = list(tmp_path.glob("graph-*.json"))
    assert len(files) == 1
    assert first.index_size_bytes() == files[0].stat().st_size
    mtime = files[0].stat().st_mtime_ns
    second = _retriever(path=str(tmp_path), decay=0.25)  # scoring options share the graph
    assert list(tmp_path.glob("graph-*.json")) == files
    assert files[0].stat().st_mtime_ns == mtime
    assert second.index_stats() == first.index_stats()
    assert second.search("alpha", 1)[0].id == "0"
    other = GraphRetriever(GraphRetriever.Options(extractors=("rules",), path=str(tmp_path)))
    other.build_index(CORPUS)  # other extractors: another key, another file
    assert len(list(tmp_path.glob("graph-*.json"))) == 2


@pytest.mark.parametrize("damage", ["swap-ids", "swap-ids-and-checksum", "edge-out-of-range", "truncated"])
def test_a_damaged_persisted_graph_is_detected_and_rebuilt(
    plugins: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    import hashlib
    import json

    expected = _retriever(path=str(tmp_path)).search("alpha", 2)
    (file,) = tmp_path.glob("graph-*.json")
    outer = json.loads(file.read_bytes())
    graph = outer["graph"]
    if damage.startswith("swap-ids"):
        graph["memory_ids"][0], graph["memory_ids"][1] = graph["memory_ids"][1], graph["memory_ids"][0]
        if damage == "swap-ids-and-checksum":  # a consistent file, but not of this corpus
            body = json.dumps(graph, ensure_ascii=False, separators=(",", ":")).encode()
            outer["checksum"] = hashlib.sha256(body).hexdigest()
        file.write_text(json.dumps(outer, separators=(",", ":")))
    elif damage == "edge-out-of-range":
        graph["targets"][0] = 10_000
        file.write_text(json.dumps(outer, separators=(",", ":")))
    else:
        file.write_bytes(file.read_bytes()[:-20])
    again = _retriever(path=str(tmp_path))
    assert "failed its check" in capsys.readouterr().err
    assert again.search("alpha", 2) == expected
    assert _retriever(path=str(tmp_path)).search("alpha", 2) == expected
    assert capsys.readouterr().err == ""  # the rebuilt file passes


def test_in_memory_size_is_the_serialised_size(plugins: None) -> None:
    retriever = _retriever()
    assert retriever.index_size_bytes() == len(retriever.graph.to_json())


def test_scope_edges_follow_created_at_order() -> None:
    from recall_kit_graph.graph import build_graph

    corpus = Corpus([
        Memory("a", "x", scope="u1", created_at="2024-01-03"),
        Memory("b", "x", scope="u1", created_at="2024-01-01"),
        Memory("c", "x", scope="u1", created_at="2024-01-02"),
        Memory("d", "x", scope="u2", created_at="2024-01-01"),
        Memory("e", "x"),  # no scope: no scope edges
    ])
    graph = build_graph(corpus, [])
    edges = {(graph.node_label(int(s), show_concepts=True), graph.node_label(int(t), show_concepts=True),
              graph.edge_types[int(k)]) for s, t, k in zip(graph.sources, graph.targets, graph.types, strict=True)}
    # c follows b, a follows c (by created_at); each scoped memory points to its scope's node.
    assert edges == {
        ("m:c", "m:b", "follows"), ("m:a", "m:c", "follows"),
        ("m:a", "#scope:u1", "same_scope"), ("m:b", "#scope:u1", "same_scope"),
        ("m:c", "#scope:u1", "same_scope"), ("m:d", "#scope:u2", "same_scope"),
    }
    assert graph.stats()["edges_by_type"] == {"same_scope": 4, "follows": 2}


def test_a_persisted_graph_is_private(plugins: None, tmp_path: Path) -> None:
    # It holds memory text (concept names, ids): 0600 like the embedding cache (was 0644).
    _retriever(path=str(tmp_path)).search("alpha", 2)
    (file,) = tmp_path.glob("graph-*.json")
    assert (file.stat().st_mode & 0o777) == 0o600
