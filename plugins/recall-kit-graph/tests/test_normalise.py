"""Concept-name normalisation: one entity, one node."""

import pytest
from recall_kit_graph.normalise import normalise_concept, query_ngrams, singular


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Kestrel", "kestrel"),
        ("KESTREL", "kestrel"),
        ("the Kestrel project's", "kestrel project"),
        ("Kestrel projects", "kestrel project"),
        ("Kestrel-Project", "kestrel project"),
        ("  Odile's  ", "odile"),
        ("Odile’s", "odile"),
        ("Chloé Duval", "chloe duval"),
        ("kestrel-tap", "kestrel tap"),
        ("events.v3", "event v3"),
        ("libraries", "library"),
        ("boxes", "box"),
        ("status", "status"),
        ("class", "class"),
        ("The", ""),
        ("of the", ""),
        ("", ""),
        ("Bank of England", "bank of england"),
    ],
)
def test_normalise_concept(text: str, expected: str) -> None:
    assert normalise_concept(text) == expected


def test_singular_leaves_short_and_non_alphabetic_words() -> None:
    assert singular("gas") == "gas"
    assert singular("v3s") == "v3s"
    assert singular("services") == "service"


def test_query_ngrams_are_normalised_and_distinct() -> None:
    # 2-grams first ("does Odile's" -> "odile", "Odile's project" -> "odile project"), then the
    # 1-grams not already found; "what" and "does" alone are stopwords and give nothing.
    assert query_ngrams("What does Odile's project use?", max_length=2) == [
        "odile", "odile project", "project use", "project", "use",
    ]


def test_query_ngrams_order() -> None:
    assert query_ngrams("Argo CD", max_length=2) == ["argo cd", "argo", "cd"]
