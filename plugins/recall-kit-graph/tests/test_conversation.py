"""The `conversation` extractor (speakers, topic words, first-person relations), session edges,
and seeding the walk with another retriever's hits (`seed_retriever`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import recall_kit_graph
from recall_kit_graph.conversation import ConversationExtractor, speaker_of, topic_words
from recall_kit_graph.extractors import Mention, Relation, extractor_registry
from recall_kit_graph.normalise import normalise_concept
from recall_kit_graph.retriever import GraphRetriever

import recall_kit
from recall_kit.plugin import Corpus, Hit, Memory, build_options
from recall_kit.testing import registered_plugin


@pytest.fixture()
def graph_plugin() -> Iterator[object]:
    with registered_plugin(recall_kit_graph, name="recall-kit-graph-test-conversation") as plugin:
        yield plugin


def _options(**raw: str) -> GraphRetriever.Options:
    return build_options("retriever 'graph'", GraphRetriever.Options, raw)


def _facts(contents: list[str], max_share: str = "1.0") -> list:
    corpus = Corpus([Memory(str(i), text) for i, text in enumerate(contents, start=1)])
    return list(ConversationExtractor(_options(topic_max_share=max_share)).extract(corpus))


def test_speaker_and_topic_words() -> None:
    assert speaker_of("Caroline: I went to a pottery class.") == "Caroline"
    assert speaker_of("Jean Luc: bonjour") == "Jean Luc"
    assert speaker_of("no speaker here: at all") is None
    # Function words, chat fillers, names (capitalised mid-sentence) and short words are not
    # topics; a capitalised word that opens a sentence is; plurals are folded to the graph's
    # singular ("kids" -> "kid"); a repeat counts once.
    assert topic_words("Wow, really great! Kids loved the Pottery class, kids and pottery") == [
        "kid", "class", "pottery",
    ]


def test_conversation_facts_by_hand() -> None:
    facts = _facts([
        "Caroline: I went to a pottery class with my kids.",
        "Melanie: We went to Paris last summer!",
        "Caroline: Pottery is so relaxing.",
    ])
    mentions = [(f.memory_id, f.edge, f.kind, normalise_concept(f.concept))
                for f in facts if isinstance(f, Mention)]
    relations = [(f.head, f.relation, normalise_concept(f.tail), f.memory_id)
                 for f in facts if isinstance(f, Relation)]
    assert mentions == [
        ("1", "said_by", "speaker", "caroline"),
        ("1", "mentions", "topic", "pottery"),
        ("1", "mentions", "topic", "class"),
        ("1", "mentions", "topic", "kid"),
        ("1", "mentions", "relation", "kid"),
        ("2", "said_by", "speaker", "melanie"),
        ("2", "mentions", "topic", "summer"),
        ("2", "mentions", "relation", "paris"),
        ("3", "said_by", "speaker", "caroline"),
        ("3", "mentions", "topic", "pottery"),
        ("3", "mentions", "topic", "relaxing"),
    ]
    # "my kids" -> has; "went to Paris" -> went_to ("went to a pottery class" names no place).
    assert relations == [("Caroline", "has", "kid", "1"), ("Melanie", "went_to", "paris", "2")]


def test_topic_in_too_many_memories_is_dropped() -> None:
    # Six memories, topic_max_share 0.5: a topic in more than max(2, 0.5 * 6) = 3 memories bridges
    # nothing and is left out; "garden" (4 memories) goes, "violin" (3) stays.
    contents = ["Ana: garden violin", "Ana: garden violin", "Ana: garden violin", "Ana: garden",
                "Ana: tennis", "Ana: chess"]
    topics = [(f.memory_id, f.concept) for f in _facts(contents, max_share="0.5")
              if isinstance(f, Mention) and f.kind == "topic"]
    assert ("4", "garden") not in topics and ("1", "garden") not in topics
    assert [memory for memory, topic in topics if topic == "violin"] == ["1", "2", "3"]


def test_conversation_is_registered(graph_plugin: object) -> None:
    assert extractor_registry().get("conversation").obj is ConversationExtractor


def test_session_nodes_join_a_session(graph_plugin: object) -> None:
    corpus = Corpus([
        Memory("a", "Ana: violin lessons", scope="c1", extra={"session": 1}),
        Memory("b", "Ana: nothing to say", scope="c1", extra={"session": 1}),
        Memory("c", "Ana: violin again", scope="c1", extra={"session": 2}),
    ])
    others = "said_by:0,same_scope:0,follows:0"  # the speaker, scope and order edges off
    retriever = GraphRetriever(_options(extractors="conversation", edge_weights=others))
    retriever.build_index(corpus)
    assert retriever.index_stats()["edges_by_type"]["same_session"] == 3
    # Session nodes are never query seeds; "b" is reached only through its session's node.
    hits = {hit.id for hit in retriever.search("violin", 10)}
    assert hits == {"a", "b", "c"}
    retriever = GraphRetriever(_options(extractors="conversation", edge_weights=others + ",same_session:0"))
    retriever.build_index(corpus)
    assert {hit.id for hit in retriever.search("violin", 10)} == {"a", "c"}


@dataclass
class FixedSeeds:
    """A retriever that answers every query with memories "x", then "y"."""

    options: object = None

    def build_index(self, corpus: Corpus) -> None:
        self.ids = [memory.id for memory in corpus]

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit("x", 2.0), Hit("y", 1.0)][:k]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [self.search(query, k) for query in queries]


class SeedPlugin:
    @recall_kit.hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        register("fixed-seeds", FixedSeeds)


def test_memory_seeds_from_another_retriever(graph_plugin: object) -> None:
    corpus = Corpus([
        Memory("x", "Ana: violin"), Memory("y", "Ana: tennis"),
        Memory("z", "Ana: violin concert"), Memory("w", "Ana: chess"),
    ])
    with registered_plugin(SeedPlugin(), name="seed-plugin"):
        retriever = GraphRetriever(_options(extractors="conversation", seed_retriever="fixed-seeds",
                                            seed_share="0.5", edge_weights="said_by:0"))
        retriever.build_index(corpus)
        # "chess" names concept c (memory w); the seeds x and y share 1/2 in proportion to
        # 1/rank: x 1/2 * 1/(1 + 1/2) = 1/3, y 1/6; the concept gets the other 1/2.
        chess = retriever.graph.concept_node("chess")
        seeds = retriever._with_memory_seeds(["chess"], [retriever.query_seeds("chess")])[0]
        assert seeds == pytest.approx({chess: 0.5, 0: 1 / 3, 1: 1 / 6})
        # A query naming no concept puts all of it on the memories: x 2/3, y 1/3.
        seeds = retriever._with_memory_seeds(["nothing known"], [{}])[0]
        assert seeds == pytest.approx({0: 2 / 3, 1: 1 / 3})
        # The walk goes x -> violin -> z: z shares a topic with the seed x, and is found though
        # the query names nothing in it; w is reached only through the query's concept.
        ranked = [hit.id for hit in retriever.search("chess", 10)]
        assert sorted(ranked) == ["w", "x", "y", "z"]
        retriever.close()
        plain = GraphRetriever(_options(extractors="conversation", edge_weights="said_by:0"))
        plain.build_index(corpus)
        assert [hit.id for hit in plain.search("chess", 10)] == ["w"]


@pytest.mark.parametrize(("raw", "message"), [
    ({"seed_depth": "0"}, "seed_depth"),
    ({"seed_share": "1.5"}, "seed_share"),
    ({"seed_retriever": "graph"}, "itself"),
    ({"seed_options": "k1:1"}, "seed_retriever is not"),
    ({"topic_max_share": "0"}, "topic_max_share"),
])
def test_seed_option_errors(raw: dict[str, str], message: str) -> None:
    with pytest.raises(Exception, match=message):
        _options(**raw)


def test_unknown_seed_retriever_is_one_clear_error(graph_plugin: object) -> None:
    from recall_kit.plugin import RecallKitError

    retriever = GraphRetriever(_options(seed_retriever="no-such-leg"))
    with pytest.raises(RecallKitError, match="Unknown retriever 'no-such-leg'"):
        retriever.build_index(Corpus([Memory("a", "Ana: violin")]))
