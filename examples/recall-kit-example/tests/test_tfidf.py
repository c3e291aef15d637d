"""The example's TF-IDF retriever: scores worked out by hand, options, registration, a real run."""

from __future__ import annotations

import math

import pytest
import recall_kit_example
from recall_kit_example import TfidfRetriever, tokenize

from recall_kit import Corpus, Memory, load_dataset, run_benchmark

# Three memories: n = 3; df(apple) = df(banana) = 2, df(cherry) = df(durian) = 1.
FRUIT = Corpus([
    Memory("1", "apple banana"),
    Memory("2", "apple cherry"),
    Memory("3", "banana banana durian"),
])
IDF_2 = math.log(4 / 3) + 1  # ln((1 + 3) / (1 + 2)) + 1, for apple and banana
IDF_1 = math.log(4 / 2) + 1  # ln((1 + 3) / (1 + 1)) + 1, for cherry and durian


def built(corpus: Corpus = FRUIT, **options: object) -> TfidfRetriever:
    retriever = TfidfRetriever(TfidfRetriever.Options(**options))
    retriever.build_index(corpus)
    return retriever


def test_tokenize_folds_case_and_splits_on_non_word_characters():
    assert tokenize('Priya\'s "API" keys—NEAR(x) 🧠 Straße') == ["priya", "s", "api", "keys", "near", "x", "strasse"]


def test_single_term_query_scores_the_cosine_by_hand():
    # Memory 2 = (apple: IDF_2, cherry: IDF_1), query = (cherry: 1): cosine = IDF_1 / |memory 2|.
    [hit] = built().search("cherry", 10)
    assert hit.id == "2"
    assert hit.score == pytest.approx(IDF_1 / math.hypot(IDF_2, IDF_1))  # 0.7960


def test_sublinear_tf_ranks_a_repeated_term_by_one_plus_log_count():
    # Memory 3: banana counted twice -> tf 1 + ln 2; memory 1: banana once -> tf 1.
    tf = 1 + math.log(2)
    hits = built().search("banana", 10)
    assert [hit.id for hit in hits] == ["3", "1"]
    assert hits[0].score == pytest.approx(tf * IDF_2 / math.hypot(tf * IDF_2, IDF_1))  # 0.7898
    assert hits[1].score == pytest.approx(IDF_2 / math.hypot(IDF_2, IDF_2))  # 1 / sqrt 2


def test_raw_tf_option():
    hits = built(sublinear_tf=False).search("banana", 10)
    assert hits[0].score == pytest.approx(2 * IDF_2 / math.hypot(2 * IDF_2, IDF_1))  # 0.8356


def test_query_terms_are_weighted_and_normalised_too():
    # Query (apple: IDF_2, cherry: IDF_1) is exactly memory 2's direction: cosine 1.
    hits = built().search("cherry apple", 10)
    assert hits[0].id == "2" and hits[0].score == pytest.approx(1.0)
    assert {hit.id for hit in hits} == {"1", "2"}


def test_memories_sharing_no_term_are_not_returned_and_min_score_filters():
    assert built().search("zebra", 10) == []
    assert built().search("", 10) == []
    assert [hit.id for hit in built(min_score=0.75).search("banana", 10)] == ["3"]


def test_ties_go_to_the_larger_id_as_strings_like_trec_eval():
    twins = Corpus([Memory("10", "same words"), Memory("2", "same words"), Memory("7", "other")])
    hits = built(twins).search("same", 5)
    assert [hit.id for hit in hits] == ["2", "10"]  # "2" > "10" as strings
    assert hits[0].score == hits[1].score


def test_fields_option_indexes_content_only():
    corpus = Corpus([Memory("a", "plain text", tags=("kestrel",)), Memory("b", "kestrel notes")])
    # "all": memory a is (plain, text, kestrel); b is (kestrel, notes); b is shorter, so first.
    assert [h.id for h in built(corpus).search("kestrel", 5)] == ["b", "a"]
    assert [h.id for h in built(corpus, fields="content").search("kestrel", 5)] == ["b"]


def test_search_many_is_one_matrix_product_that_agrees_with_search():
    retriever = built()
    queries = ["banana", "cherry apple", "", "zebra"]
    assert retriever.search_many(queries, 2) == [retriever.search(q, 2) for q in queries]
    assert retriever.search_many([], 2) == []


def test_index_size_is_the_arrays_and_the_vocabulary():
    retriever = built()
    # 3 memories x 4 terms of float64, 4 idf values, and the terms' bytes.
    assert retriever.index_size_bytes() == 3 * 4 * 8 + 4 * 8 + len("applebananacherrydurian")
    assert retriever.index_stats() == {"terms": 4, "memories": 3}
    empty = TfidfRetriever()
    empty.build_index(Corpus([]))
    assert empty.index_size_bytes() is None and empty.search("apple", 3) == []


def test_registers_as_example(recall_kit_plugin):
    from recall_kit.testing import registries

    recall_kit_plugin(recall_kit_example)
    registration = registries()["retrievers"].get("example")
    assert registration.obj is TfidfRetriever


def test_a_real_run_on_the_sample_dataset(recall_kit_plugin, recall_kit_dataset):
    recall_kit_plugin(recall_kit_example)
    result = run_benchmark("example", load_dataset(recall_kit_dataset), k=5,
                           metrics=["recall@5", "mrr"], latency_sample=0)
    queries = {q["query_id"]: q for q in result.to_dict()["queries"]}
    # "rotate the Driftwood API keys" shares four terms with memory 4 and only one elsewhere.
    assert queries["exact_keys"]["ranking"][0] == "4"
    assert queries["exact_keys"]["metrics"]["mrr"] == 1.0
    # No memory says "coffee" in its words: the paraphrase is out of a bag of words' reach.
    assert queries["para_coffee"]["metrics"]["recall@5"] == 0.0
