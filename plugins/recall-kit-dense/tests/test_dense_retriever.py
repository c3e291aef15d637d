"""The dense retriever with the real default model (all-MiniLM-L6-v2, bundled) on tiny corpora."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import recall_kit_dense
from recall_kit_dense.ann import portable_top_k
from recall_kit_dense.models import DenseModelError, load_model, resolve_model, token_lengths
from recall_kit_dense.retriever import DenseRetriever, memory_text

from recall_kit.plugin import GRID, Corpus, Hit, Memory, OptionError, RecallKitError, build_options
from recall_kit.testing import registered_plugin, registries

Options = DenseRetriever.Options

MEMORIES = [
    Memory("1", "The cat sleeps on the warm windowsill every afternoon.", category="pets"),
    Memory("2", "Quarterly revenue grew eight percent, driven by subscription sales.", category="work"),
    Memory("3", "My sister's wedding is in Lisbon next June.", category="family"),
    Memory("4", "Bake the sourdough at 230 degrees for forty minutes.", category="recipe"),
    Memory("5", "The flight to Tokyo leaves from gate 42 at 7am.", category="travel"),
    Memory("6", "", category=""),  # an empty memory: embedded as the empty string
]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_exports: Callable[[Path], Path]) -> Path:
    folder = with_exports(tmp_path / "cache")
    monkeypatch.setenv("RECALL_KIT_CACHE", str(folder))
    return folder / "dense"


@pytest.fixture
def corpus() -> Corpus:
    return Corpus(MEMORIES)


def built(corpus: Corpus, **options: object) -> DenseRetriever:
    retriever = DenseRetriever(Options(**options))  # type: ignore[arg-type]
    retriever.build_index(corpus)
    return retriever


def test_registered_as_dense() -> None:
    with registered_plugin(recall_kit_dense):
        assert registries()["retrievers"].get("dense").obj is DenseRetriever


def test_corpus_vectors_are_unit_length_and_the_size_is_the_matrix(corpus: Corpus) -> None:
    retriever = built(corpus)
    matrix = retriever.embeddings
    assert matrix is not None and matrix.shape == (6, 384) and matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert retriever.index_size_bytes() == 6 * 384 * 4 == matrix.nbytes
    stats = retriever.index_stats()
    assert stats["dimension"] == 384
    assert stats["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert stats["model_source"] == "bundled"
    assert stats["truncated_memories"] == 0
    assert stats["cache_hit"] is False and stats["embedded_memories"] == 6


def test_cosine_of_a_memory_with_itself_is_one(corpus: Corpus) -> None:
    retriever = built(corpus, fields=("content",))
    hits = retriever.search(MEMORIES[3].content, 3)
    assert hits[0].id == "4"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(hit.score <= 1.0 + 1e-5 for hit in hits)


def test_paraphrases_find_their_memory(corpus: Corpus) -> None:
    retriever = built(corpus)
    assert retriever.search("a kitten napping in the sun by the window", 1)[0].id == "1"
    assert retriever.search("what time is my plane to Japan", 1)[0].id == "5"
    assert retriever.search("when is my sibling getting married", 1)[0].id == "3"


def test_search_many_equals_search(corpus: Corpus) -> None:
    retriever = built(corpus)
    queries = ["kitten", "company earnings", "bread oven temperature", "airport departure", ""]
    batch = retriever.search_many(queries, 4)
    assert len(batch) == len(queries)
    for query, answer in zip(queries, batch, strict=True):
        single = retriever.search(query, 4)
        assert [hit.id for hit in answer] == [hit.id for hit in single]
        # Padding in a batch moves float32 sums in the last bits only.
        np.testing.assert_allclose([h.score for h in answer], [h.score for h in single], atol=1e-5)


def test_empty_query_zero_k_and_empty_memory(corpus: Corpus) -> None:
    retriever = built(corpus)
    assert retriever.search("", 5) == []
    assert retriever.search("   \n", 5) == []
    assert retriever.search("cat", 0) == []
    everything = retriever.search("cat", 100)
    assert sorted(hit.id for hit in everything) == ["1", "2", "3", "4", "5", "6"]  # "6" is empty
    scores = [hit.score for hit in everything]
    assert scores == sorted(scores, reverse=True)


def test_an_empty_corpus_answers_nothing() -> None:
    retriever = built(Corpus([]))
    assert retriever.search("anything", 5) == []
    assert retriever.search_many(["a", "b"], 5) == [[], []]
    assert retriever.index_size_bytes() == 0


def test_ties_are_ordered_as_sort_hits_orders_them() -> None:
    # Two memories with the same text embed to the same vector: a tie, settled by id descending.
    same = "The boiler service is booked for Tuesday."
    corpus = Corpus([Memory("a", same), Memory("b", same), Memory("c", "Unrelated: tulips bloom.")])
    retriever = built(corpus, fields=("content",))
    hits = retriever.search("boiler appointment", 3)
    assert [hit.id for hit in hits[:2]] == ["b", "a"]
    assert hits[0].score == hits[1].score
    # At the cut (k=1) the tie is still settled by id, not by where argpartition put it.
    assert [hit.id for hit in retriever.search("boiler appointment", 1)] == ["b"]


def test_portable_top_k_by_hand() -> None:
    ids = ["1", "2", "3", "4", "5"]
    matrix = np.eye(5, dtype=np.float32)  # memory i's score is the query's i-th entry
    queries = np.array([[0.1, 0.9, 0.5, 0.9, 0.2], [0.3, 0.3, 0.3, 0.3, 0.3]], dtype=np.float32)
    first, second = portable_top_k(matrix, queries, queries @ matrix.T, ids, 2)
    assert [hit.id for hit in first] == ["4", "2"]  # 0.9 twice: id "4" > "2"
    assert [hit.id for hit in second] == ["5", "4"]  # all tied: highest ids
    assert portable_top_k(matrix, queries, queries @ matrix.T, ids, 10)[0][-1] == Hit("1", pytest.approx(0.1, abs=GRID))
    assert portable_top_k(matrix, queries, queries @ matrix.T, ids, 0) == [[], []]


def test_portable_top_k_is_blind_to_last_bits_of_the_sum() -> None:
    """Scores a last bit apart (as two CPUs' kernels sum them) pick the same memories in the same
    order: the float32 scores only choose candidates; the float64 rescoring on the grid, ties by id,
    ranks them."""
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(200, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix[7] = matrix[3]  # an exact tie: two memories with one embedding
    queries = matrix[[3, 11]] + np.float32(1e-3) * rng.normal(size=(2, 384)).astype(np.float32)
    ids = [f"m{i:03d}" for i in range(200)]
    scores = queries @ matrix.T
    nudged = np.nextafter(scores, np.float32(np.inf) * np.sign(rng.normal(size=scores.shape)).astype(np.float32))
    assert (nudged != scores).all()
    first = portable_top_k(matrix, queries, scores, ids, 10)
    again = portable_top_k(matrix, queries, nudged, ids, 10)
    assert first == again
    assert [hit.id for hit in first[0][:2]] == ["m007", "m003"]  # tied on the grid: the higher id first
    assert first[0][0].score == first[0][1].score


def test_fields_option_chooses_the_text(corpus: Corpus) -> None:
    memory = Memory("x", "Buy oat milk.", category="shopping", tags=("grocery", "list"),
                    expanded_keywords="errand")
    assert memory_text(memory, ("searchable_text",)) == "Buy oat milk.\nshopping\ngrocery list\nerrand"
    assert memory_text(memory, ("content",)) == "Buy oat milk."
    assert memory_text(memory, ("content", "tags")) == "Buy oat milk.\ngrocery list"
    with_category = built(corpus).embeddings
    content_only = built(corpus, fields=("content",)).embeddings
    assert with_category is not None and content_only is not None
    assert not np.allclose(with_category[0], content_only[0])


def test_options_from_command_line_strings() -> None:
    options = build_options("retriever 'dense'", Options, {
        "fields": "content,tags", "query_prefix": "none", "doc_prefix": "", "batch_size": "8",
        "index": "faiss", "ann_recall_check": "true", "max_seq_length": "128",
    })
    assert options.fields == ("content", "tags")
    assert options.query_prefix is None and options.doc_prefix == ""
    assert (options.batch_size, options.index, options.ann_recall_check) == (8, "faiss", True)
    assert options.max_seq_length == 128
    for bad in ({"fields": "body"}, {"batch_size": "0"}, {"device": "gpu"}, {"index": "annoy"}):
        with pytest.raises(OptionError):
            build_options("retriever 'dense'", Options, bad)


def test_truncated_memories_are_counted_against_the_window() -> None:
    long_memory = Memory("long", "word " * 400)  # 400 tokens + [CLS] + [SEP]
    corpus = Corpus([long_memory, Memory("short", "a short note")])
    assert built(corpus).index_stats()["truncated_memories"] == 1  # window 256
    wide = built(corpus, max_seq_length=512).index_stats()
    assert wide["truncated_memories"] == 0 and wide["max_seq_length"] == 512
    narrow = built(corpus, max_seq_length=3).index_stats()
    assert narrow["truncated_memories"] == 2  # "a short note" is 3 tokens + 2 special


@pytest.mark.parametrize("window", [None, 6, 9])
def test_the_truncation_count_read_off_the_models_tokenization_is_the_full_count(window, monkeypatch) -> None:
    """Counted from the rows that filled their batch (recall_kit_dense.truncation), the number of
    memories cut at the window is the number a second tokenization of every memory gives; only
    the rows that filled their batch are tokenized again."""
    from recall_kit_dense import truncation

    rng = np.random.default_rng(5)
    words = "the cat sat on a warm mat near my sister's lisbon flight gate garden invoice".split()
    memories = [Memory(str(i), " ".join(rng.choice(words, size=int(rng.integers(1, 12)))))
                for i in range(90)] + [Memory("long", "word " * 400), Memory("accents", "é" * 300)]
    options = {"batch_size": 4, "cache": False, **({"max_seq_length": window} if window else {})}
    watched: list[truncation.Watch] = []
    original = truncation.Watch.truncated

    def spy(self: truncation.Watch, loaded: object, embedded: int) -> int | None:
        watched.append(self)
        return original(self, loaded, embedded)  # type: ignore[arg-type]

    monkeypatch.setattr(truncation.Watch, "truncated", spy)
    retriever = built(Corpus(memories), **options)
    texts = [memory.content for memory in memories]
    expected = retriever._count_truncated(retriever._model(), texts)
    assert retriever.index_stats()["truncated_memories"] == expected
    assert expected == sum(1 for length in token_lengths(retriever._model(), texts)
                           if length > (window or 256))
    assert expected >= (1 if window is None else 10)
    (watch,) = watched
    assert watch.seen == len(memories) and not watch.blind and len(watch.filled) < len(memories)


def test_a_watch_that_did_not_see_every_memory_counts_them_all() -> None:
    class OneMoreCall(DenseRetriever):
        def _embed_documents(self, texts: list[str]) -> np.ndarray:
            self._encode(["word " * 300], "")  # a call the watch sees besides the memories
            return super()._embed_documents(texts)

    retriever = OneMoreCall(Options(cache=False))
    retriever.build_index(Corpus([Memory("long", "word " * 400), Memory("short", "a short note")]))
    assert retriever.index_stats()["truncated_memories"] == 1


def test_max_seq_length_past_the_models_positions_is_one_clear_line() -> None:
    with pytest.raises(DenseModelError, match=r"exceeds the 512 positions") as caught:
        built(Corpus(MEMORIES[:1]), max_seq_length=4096)
    assert "\n" not in str(caught.value)


def test_a_model_is_loaded_once_and_shared(corpus: Corpus) -> None:
    first, second = built(corpus), built(Corpus(MEMORIES[:2]))
    assert first._loaded is not None and first._loaded is second._loaded
    assert built(corpus, max_seq_length=128)._loaded is not first._loaded


def test_a_model_folder_works_like_the_bundled_name(corpus: Corpus) -> None:
    folder = resolve_model("sentence-transformers/all-MiniLM-L6-v2").folder
    by_folder = built(corpus, model=str(folder))
    assert by_folder.index_stats()["model_source"] == "folder"
    np.testing.assert_allclose(by_folder.embeddings, built(corpus).embeddings, atol=1e-6)


def test_a_named_model_in_the_local_hub_cache_loads_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus: Corpus
) -> None:
    """A hub-cache layout built from the bundled files, under a BGE-like name: found with no
    network, and the BGE query prefix is applied."""
    bundled = resolve_model("all-MiniLM-L6-v2").folder
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--acme--bge-tiny-test"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(bundled, repo / "snapshots" / commit, copy_function=os.symlink)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    retriever = built(corpus, model="acme/bge-tiny-test")
    stats = retriever.index_stats()
    assert (stats["model"], stats["model_source"], stats["prefixes"]) == (
        "acme/bge-tiny-test", "hub cache", "bge")
    assert retriever._prefixes is not None
    assert retriever._prefixes.query.startswith("Represent this sentence")


def test_an_unknown_model_name_offline_is_one_line_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(DenseModelError) as caught:
        built(Corpus(MEMORIES[:1]), model="no-such-org/no-such-model-2718")
    message = str(caught.value)
    assert isinstance(caught.value, RecallKitError)
    assert "\n" not in message
    assert "'no-such-org/no-such-model-2718' is not available offline" in message
    assert "allow_download=true" in message and "local folder" in message


def test_a_folder_that_is_not_a_model_is_one_clear_line(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("not a model")
    with pytest.raises(DenseModelError, match="is not a sentence-transformers model folder"):
        built(Corpus(MEMORIES[:1]), model=str(folder))
    with pytest.raises(DenseModelError, match="does not exist"):
        built(Corpus(MEMORIES[:1]), model=str(tmp_path / "missing"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    with pytest.raises(DenseModelError, match="could not be loaded as a sentence-transformers model"):
        built(Corpus(MEMORIES[:1]), model=str(broken))


def test_cuda_on_a_machine_without_one_is_one_clear_line() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(DenseModelError, match="sees no CUDA GPU"):
        built(Corpus(MEMORIES[:1]), device="cuda")
    assert built(Corpus(MEMORIES[:1]), device="auto").index_stats()["device"] in ("cpu", "mps")


@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_token_counts_through_the_private_tokenizer_are_the_models_tokenizers(backend: str) -> None:
    """The counting tokenizer (a private copy; on ONNX Runtime the export's tokenizer.json)
    counts the tokens the model's own tokenizer makes, untruncated."""
    from recall_kit_dense.models import counting_tokenizer

    loaded = DenseRetriever(Options(backend=backend))._model()  # type: ignore[arg-type]
    assert loaded.backend == backend
    torch_loaded = DenseRetriever(Options(backend="torch"))._model()
    texts = [memory.content for memory in MEMORIES] + [
        "word " * 400, "é" * 300, "😀" * 50, " ", "\x00\t\n", "Ｆｕｌｌ　ｗｉｄｔｈ", "﷽" * 20, "McDonald's e-mail #42",
        "\ud800 a lone surrogate".encode("utf-16", "surrogatepass").decode("utf-16", "replace"),
    ]
    assert counting_tokenizer(loaded) is not None
    expected = [len(ids) for ids in torch_loaded.model.tokenizer(texts, truncation=False)["input_ids"]]
    assert token_lengths(loaded, texts) == token_lengths(loaded, texts, chunk=3) == expected
    assert max(expected) > 256  # untruncated
    # The model's own tokenizer, asked again, still truncates as encode set it: the copy changed nothing.
    truncated = torch_loaded.model.tokenize(["word " * 400])["input_ids"]
    assert truncated.shape[1] == torch_loaded.max_seq_length


def test_memories_past_one_encode_call_embed_in_length_order_and_land_on_their_own_rows() -> None:
    """More memories than one encode call holds (batch_size * 4) are embedded in chunks taken in
    length order (each call's batches hold texts of like length, as one call would), and each
    vector is put back on its memory's row: equal to embedding every text in one call."""
    rng = np.random.default_rng(3)
    words = "the cat sat on a warm mat near my sister's lisbon flight gate garden invoice".split()
    memories = [Memory(str(i), " ".join(rng.choice(words, size=int(rng.integers(1, 60)))))
                for i in range(37)]
    retriever = built(Corpus(memories), batch_size=2, fields=("content",), cache=False)  # 8 texts a call
    order, chunks = retriever._document_chunks([memory.content for memory in memories])
    assert order is not None and [len(chunk) for chunk in chunks] == [8, 8, 8, 8, 5]
    lengths = [len(memories[i].content) for i in order]
    assert lengths == sorted(lengths, reverse=True)
    assert retriever._model().backend == "onnx"  # the default on a CPU; the reference is torch's
    reference = load_model(resolve_model(Options().model), "cpu").model
    direct = reference.encode([memory.content for memory in memories], batch_size=2,
                              normalize_embeddings=True, convert_to_numpy=True)
    assert retriever.embeddings is not None
    np.testing.assert_allclose(retriever.embeddings, direct, atol=1e-5)
    stats = retriever.index_stats()
    assert stats["embedded_memories"] == 37 and stats["embed_seconds"] > 0
    assert retriever._document_chunks(["short", "texts"]) == (None, [["short", "texts"]])


def test_a_cache_hit_embeds_nothing_and_takes_no_embedding_time(corpus: Corpus) -> None:
    built(corpus)
    stats = built(corpus).index_stats()
    assert stats["cache_hit"] is True and stats["embedded_memories"] == 0 and stats["embed_seconds"] == 0.0
