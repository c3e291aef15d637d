"""The rules extractor, the triples loader (and its file:line errors), and the extractor hook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import recall_kit_graph
from recall_kit_graph.extractors import (
    Mention,
    Relation,
    RulesExtractor,
    TriplesExtractor,
    UnknownExtractorError,
    extractor_registry,
)
from recall_kit_graph.normalise import normalise_concept
from recall_kit_graph.retriever import GraphRetriever

from recall_kit.plugin import Corpus, DatasetError, Memory
from recall_kit.testing import registered_plugin


@pytest.fixture()
def graph_plugin() -> Iterator[object]:
    with registered_plugin(recall_kit_graph, name="recall-kit-graph-test-extractors") as plugin:
        yield plugin


def _facts(content: str, tags: tuple[str, ...] = (), keywords: str = "") -> list:
    corpus = Corpus([Memory("7", content, tags=tags, expanded_keywords=keywords)])
    return list(RulesExtractor().extract(corpus))


def _mentions(facts: list, kind: str | None = None) -> list[str]:
    return [f.concept for f in facts if isinstance(f, Mention) and (kind is None or f.kind == kind)]


def _relations(facts: list) -> list[tuple[str, str, str]]:
    """Relations with normalised ends (the graph normalises them: "The NAS" is "nas")."""
    return [(normalise_concept(f.head), f.relation, normalise_concept(f.tail))
            for f in facts if isinstance(f, Relation)]


def test_rules_tags_keywords_and_names() -> None:
    facts = _facts(
        "Yesterday Odile Fenwick met the Kestrel team at Brightmoor, as planned yesterday.",
        tags=("kestrel", "people"),
        keywords="manager boss",
    )
    assert [(f.concept, f.edge) for f in facts if f.kind == "tag"] == [
        ("kestrel", "tagged"), ("people", "tagged"),
    ]
    assert _mentions(facts, "keyword") == ["manager", "boss"]
    # "Yesterday" opens the sentence, is written lowercase too and is capitalised nowhere else
    # mid-sentence: not a name. "Odile" also opens it, but is never lowercase: a name.
    # A multi-word name is also found by its parts.
    assert _mentions(facts, "name") == ["Odile Fenwick", "Odile", "Fenwick", "Kestrel", "Brightmoor"]
    assert all(f.memory_id == "7" for f in facts)


def test_rules_sentence_start_word_is_a_name_unless_written_lowercase() -> None:
    corpus = Corpus([
        Memory("1", "Kestrel stores events. Meetings are short. Sessions run long."),
        Memory("2", "We moved Kestrel to ClickHouse; long meetings, kestrel and Sessions."),
    ])
    names = [f.concept for f in RulesExtractor().extract(corpus) if isinstance(f, Mention) and f.kind == "name"]
    # "Meetings" is written lowercase elsewhere: not a name. "Kestrel" is too, but is also
    # capitalised mid-sentence: a name. "Sessions" is capitalised mid-sentence: a name. "We" is
    # a stopword: the graph drops it when it normalises names.
    assert names == ["Kestrel", "Sessions", "We", "Kestrel", "ClickHouse", "Sessions"]


def test_rules_identifiers() -> None:
    facts = _facts("Restart kestrel-tap if events.v3 lags; see the os-docs cluster.")
    assert _mentions(facts, "identifier") == ["kestrel-tap", "events.v3", "os-docs"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Halyard uses Terraform for infrastructure.", ("Halyard", "uses", "Terraform")),
        ("Rafael Quintero works on Halyard, the deployment platform.", ("Rafael Quintero", "works_on", "Halyard")),
        ("Ingrid Solberg is based in Oslo and likes mornings.", ("Ingrid Solberg", "located_in", "Oslo")),
        ("The NAS is located in the spare room.", ("NAS", "located_in", "spare room")),
        ("Hana works at Pennyroyal.", ("Hana", "works_at", "Pennyroyal")),
        ("Marigold depends on Stripe for card payments.", ("Marigold", "depends_on", "Stripe")),
        ("The crawler is part of Lanternfish.", ("crawler", "part_of", "Lanternfish")),
        ("Odile Fenwick leads the Kestrel project.", ("Odile Fenwick", "works_on", "Kestrel")),
        ("The team decided Postgres.", ("team", "decided", "Postgres")),
        ("Kestrel is a analytics pipeline.", ("Kestrel", "is_a", "analytics pipeline")),
    ],
)
def test_rules_relation_patterns(content: str, expected: tuple[str, str, str]) -> None:
    facts = _facts(content)
    head, relation, tail = expected
    assert (normalise_concept(head), relation, normalise_concept(tail)) in _relations(facts)
    # Both ends of a relation are also mentioned by the memory that states it.
    mentioned = {normalise_concept(name) for name in _mentions(facts, "relation")}
    assert {normalise_concept(head), normalise_concept(tail)} <= mentioned


def test_rules_no_relation_without_both_ends() -> None:
    assert _relations(_facts("Uses Terraform.")) == []
    assert _relations(_facts("It depends on.")) == []


# --- triples --------------------------------------------------------------------------------


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "triples.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_triples_loader_reads_facts_and_skips_other_memories(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        '{"memory_id": 40, "head": "Odile Fenwick", "relation": "Works On", "tail": "Kestrel"}',
        "",
        '{"memory_id": "999", "head": "Alpha", "relation": "uses", "tail": "Beta"}',
        '{"memory_id": null, "head": "Kestrel", "relation": "uses", "tail": "ClickHouse"}',
    ])
    corpus = Corpus([Memory("40", "x")])
    facts = list(TriplesExtractor(GraphRetriever.Options(extractors=("triples",), triples=str(path))).extract(corpus))
    assert facts == [
        Mention("40", "Odile Fenwick", "mentions", "triple"),
        Mention("40", "Kestrel", "mentions", "triple"),
        Relation("Odile Fenwick", "works_on", "Kestrel", "40"),
        Relation("Kestrel", "uses", "ClickHouse", None),
    ]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "triples.jsonl:2: not valid JSON"),
        ("[1, 2]", "triples.jsonl:2: expected a JSON object"),
        ('{"memory_id": 1, "head": "Alpha", "tail": "Beta"}', 'triples.jsonl:2: missing "relation"'),
        ('{"memory_id": 1.5, "head": "Alpha", "relation": "uses", "tail": "Beta"}', 'triples.jsonl:2: "memory_id" must be'),
        ('{"memory_id": true, "head": "Alpha", "relation": "uses", "tail": "Beta"}', 'triples.jsonl:2: "memory_id" must be'),
        ('{"memory_id": 1, "head": 3, "relation": "uses", "tail": "Beta"}', 'triples.jsonl:2: "head" must be a string'),
        ('{"memory_id": 1, "head": "the", "relation": "uses", "tail": "Beta"}', 'triples.jsonl:2: "head" is empty'),
        ('{"memory_id": 1, "head": "Alpha", "relation": "--", "tail": "Beta"}', 'triples.jsonl:2: "relation" is empty'),
    ],
)
def test_triples_loader_malformed_lines(tmp_path: Path, bad_line: str, message: str) -> None:
    path = _write(tmp_path, ['{"memory_id": 1, "head": "Alpha", "relation": "uses", "tail": "Beta"}', bad_line])
    extractor = TriplesExtractor(GraphRetriever.Options(extractors=("triples",), triples=str(path)))
    with pytest.raises(DatasetError) as caught:
        list(extractor.extract(Corpus([Memory("1", "x")])))
    assert str(caught.value).startswith(message)


def test_triples_missing_file(tmp_path: Path) -> None:
    extractor = TriplesExtractor(GraphRetriever.Options(extractors=("triples",), triples=str(tmp_path / "nope.jsonl")))
    with pytest.raises(DatasetError, match="nope.jsonl: missing"):
        list(extractor.extract(Corpus([Memory("1", "x")])))


def test_triples_option_requires_the_extractor() -> None:
    with pytest.raises(ValueError, match="'triples' is not in extractors"):
        GraphRetriever.Options(triples="t.jsonl")


# --- the hook -------------------------------------------------------------------------------


def test_extractor_registry_lists_the_builtins(graph_plugin: object) -> None:
    registry = extractor_registry()
    assert registry.names() == ["conversation", "rules", "triples"]
    assert registry.get("rules").obj is RulesExtractor
    with pytest.raises(UnknownExtractorError, match=r"Unknown extractor 'rule' \(did you mean 'rules'\?\)\. Available: conversation, rules, triples"):
        registry.get("rule")


def test_graph_retriever_with_triples_builds_relation_edges(graph_plugin: object, tmp_path: Path) -> None:
    path = _write(tmp_path, ['{"memory_id": 2, "head": "Zed", "relation": "owns", "tail": "Quux"}'])
    retriever = GraphRetriever(GraphRetriever.Options(extractors=("rules", "triples"), triples=str(path)))
    retriever.build_index(Corpus([Memory("1", "nothing here"), Memory("2", "lowercase only")]))
    stats = retriever.index_stats()
    # memory 2 mentions zed and quux (2 edges), plus the relation zed -owns-> quux.
    assert stats["edges"] == 3
    assert stats["edges_by_type"] == {"mentions": 2, "other": 1}
    assert [hit.id for hit in retriever.search("Who is Zed?", 5)] == ["2"]
