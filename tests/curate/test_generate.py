"""`dataset generate`: exact queries unique to their memory (checked by brute force), appended
without duplicate ids, validated; other strata only through the register_query_generators hook."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall_kit
from recall_kit import GeneratedQuery, QueryGenerator
from recall_kit.cli import app
from recall_kit.curate.generate import ExactPhraseGenerator, generate_into, parse_generator_requests, phrase_candidates
from recall_kit.curate.text import STOPWORDS
from recall_kit.dataset import load_dataset, read_dataset
from recall_kit.errors import OptionError, UnknownGeneratorError
from recall_kit.registry import generators
from recall_kit.testing import registered_plugin, write_sample_dataset
from recall_kit.types import Corpus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "memories"

# A small corpus written for these tests: two near-identical memories (5, 6) whose shared phrases
# must never become exact queries, a chunked document (7a, 7b of parent 7), sentence punctuation.
SMALL_CORPUS = [
    {"id": 1, "content": "Kestrel stores raw click events in ClickHouse. Partitions rotate daily."},
    {"id": 2, "content": "Priya Raman leads the Kestrel analytics project from the Leeds office."},
    {"id": 3, "content": "Morning coffee is a cortado with oat milk; never any sugar."},
    {"id": 4, "content": "Rotate the Driftwood API keys every quarter, then update the vault entry."},
    {"id": 5, "content": "The sourdough starter is called Gerald and lives in the fridge."},
    {"id": 6, "content": "The sourdough starter is called Gerald and lives in the fridge door."},
    {"id": "7a", "content": "Halyard deploys through Argo CD onto the EKS cluster", "parent_id": "7"},
    {"id": "7b", "content": "onto the EKS cluster with Terraform managed networking", "parent_id": "7"},
    {"id": 8, "content": "Quillback syncs dotfiles between laptops using the git2 crate.", "tags": "quillback,rust"},
    {"id": 9, "content": "Secret diagnosis text", "is_sensitive": True},
]


def write_corpus(folder: Path, rows: list[dict] = SMALL_CORPUS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def brute_force_holders(phrase: str, corpus_rows: list[dict]) -> set[str]:
    """Ids (parent ids for chunks) of loadable memories whose text holds the phrase, found the slow
    way: every field of every row, lowercased and whitespace-collapsed, searched as a substring."""
    needle = " ".join(phrase.lower().split())
    holders = set()
    for row in corpus_rows:
        if row.get("is_sensitive") is True:
            continue
        fields = [row.get("content", ""), row.get("category", ""), row.get("tags", ""), row.get("expanded_keywords", "")]
        tags = row.get("tags", "")
        fields[2] = " ".join(t.strip() for t in tags.split(",")) if isinstance(tags, str) else " ".join(tags)
        if any(needle in " ".join(str(f).lower().split()) for f in fields if f):
            holders.add(str(row.get("parent_id") or row["id"]))
    return holders


def check_exact_queries(out: Path, corpus_rows: list[dict], expected: int) -> list[dict]:
    queries = [q for q in read_jsonl(out / "queries.jsonl") if q.get("_generator") == "exact"]
    qrels = {row["query_id"]: row for row in read_jsonl(out / "qrels.jsonl")}
    assert len(queries) == expected
    for query in queries:
        phrase = query["text"]
        tokens = phrase.split()
        assert 3 <= len(tokens) <= 6, query["query_id"]
        assert not re.search(r"[.!?;:,](\s|$)", phrase), f"{query['query_id']} crosses punctuation"
        content_words = [w for w in re.findall(r"[^\W_]+", phrase.lower()) if w not in STOPWORDS]
        assert len(content_words) >= 2
        relevant = [str(doc) for doc in qrels[query["query_id"]]["relevant_ids"]]
        assert len(relevant) == 1
        assert brute_force_holders(phrase, corpus_rows) == set(relevant), query["query_id"]
        assert query["stratum"] == "exact"
    return queries


def test_exact_queries_are_unique_to_their_memory_small_corpus(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "store")
    out = tmp_path / "out"
    summary = generate_into(source, [("exact", 20)], seed=7, out=out)
    # 7 units can carry a query (1, 2, 3, 4, 7, 8, and one of the 5/6 twins whose only unique
    # words are "door" + ...): at most 8 units exist, the sensitive row never counts.
    written = summary.written["exact"]
    assert 5 <= written <= 8
    queries = check_exact_queries(out, SMALL_CORPUS, written)
    relevant = {str(row["relevant_ids"][0]) for row in read_jsonl(out / "qrels.jsonl")}
    assert "9" not in relevant and "7a" not in relevant and "7b" not in relevant
    assert len(relevant) == written  # one query per memory
    assert all(q["_source_id"] != "9" for q in queries)
    assert all(q["answer"] == q["text"] for q in queries)  # an exact query's answer is its phrase
    assert (out / "corpus.jsonl").read_bytes() == (source / "corpus.jsonl").read_bytes()
    dataset, problems = read_dataset(out)
    assert problems == [] and dataset is not None


def test_exact_queries_are_unique_on_examples(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "store", [])
    (source / "corpus.jsonl").write_bytes((EXAMPLES / "corpus.jsonl").read_bytes())
    rows = read_jsonl(source / "corpus.jsonl")
    generate_into(source, [("exact", 60)], seed=1, out=tmp_path / "out")
    check_exact_queries(tmp_path / "out", rows, 60)


def test_seeded_and_reproducible(tmp_path: Path) -> None:
    corpus = load_dataset(write_sample_dataset(tmp_path / "sample")).corpus
    generator = ExactPhraseGenerator()
    first = generator.generate(corpus, 5, seed=3)
    assert first == generator.generate(corpus, 5, seed=3)
    assert len(first) == 5
    other = generator.generate(corpus, 5, seed=4)
    assert [q.relevance for q in first] != [q.relevance for q in other]


def test_phrases_never_cross_sentence_punctuation() -> None:
    idf = {w: 5.0 for w in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]}
    candidates = phrase_candidates("Alpha beta gamma. Delta epsilon zeta; eta theta alpha", idf, 3, 6)
    texts = {c.text for c in candidates}
    assert texts == {"Alpha beta gamma", "Delta epsilon zeta", "eta theta alpha"}
    # Stopwords never stand at an edge; half the tokens at least carry content.
    assert [c.text for c in phrase_candidates("of the alpha and the beta", idf, 3, 6)] == ["alpha and the beta"]
    assert phrase_candidates("alpha of the and the beta", idf, 3, 6) == []
    assert phrase_candidates("the and of it", idf, 3, 6) == []


def test_append_keeps_existing_rows_and_never_duplicates_ids(tmp_path: Path) -> None:
    folder = write_sample_dataset(tmp_path / "sample")
    before_queries = read_jsonl(folder / "queries.jsonl")
    before_qrels = read_jsonl(folder / "qrels.jsonl")
    generate_into(folder, [("exact", 3)], seed=0)
    generate_into(folder, [("exact", 3)], seed=1)
    queries = read_jsonl(folder / "queries.jsonl")
    qrels = read_jsonl(folder / "qrels.jsonl")
    assert queries[: len(before_queries)] == before_queries
    assert qrels[: len(before_qrels)] == before_qrels
    ids = [q["query_id"] for q in queries]
    assert len(ids) == len(set(ids))
    texts = [" ".join(q["text"].lower().split()) for q in queries]
    assert len(texts) == len(set(texts))
    assert len(queries) > len(before_queries) + 3  # the second run added queries too
    assert sorted(ids) == sorted(row["query_id"] for row in qrels)
    dataset = load_dataset(folder)
    assert "exact" in dataset.strata


def test_a_folder_with_only_queries_or_only_qrels_is_refused(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "store")
    (source / "queries.jsonl").write_text('{"query_id": "a", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(recall_kit.errors.DatasetError, match="no qrels.jsonl"):
        generate_into(source, [("exact", 2)])


# -- the hook: other strata come from generator plugins ------------------------------------------


class TagQuestionGenerator(QueryGenerator):
    """A real (if simple) plugin generator: 'which memories are tagged T' -> every memory with T."""

    stratum = "paraphrase"
    description = "tag questions (tests)"

    @dataclass(frozen=True)
    class Options:
        prefix: str = "memories about"

    def generate(self, corpus: Corpus, count: int, seed: int) -> list[GeneratedQuery]:
        by_tag: dict[str, list[str]] = {}
        for memory in corpus:
            for tag in memory.tags:
                by_tag.setdefault(tag, []).append(memory.id)
        return [
            GeneratedQuery(f"{self.options.prefix} {tag}", dict.fromkeys(ids, 1), provenance={"tag_count": len(ids)})
            for tag, ids in sorted(by_tag.items())[:count]
        ]


class TagPlugin:
    @recall_kit.hookimpl
    def register_query_generators(self, register):  # type: ignore[no-untyped-def]
        register("tags", TagQuestionGenerator)


@pytest.fixture
def tag_plugin():
    with registered_plugin(TagPlugin(), name="tag-generator-plugin") as plugin:
        yield plugin


def test_exact_is_registered_through_the_hook() -> None:
    registration = generators.get("exact")
    assert registration.obj is ExactPhraseGenerator
    assert registration.plugin == "recall_kit.default_plugins.generators"


def test_paraphrase_without_a_generator_is_one_line_naming_the_hook(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="register_query_generators"):
        parse_generator_requests(paraphrase=5)
    source = write_corpus(tmp_path / "store")
    result = CliRunner().invoke(app, ["dataset", "generate", str(source), "--multihop", "3"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "stratum 'multihop'" in lines[0] and "register_query_generators" in lines[0]
    assert not (source / "queries.jsonl").exists()


def test_unknown_generator_lists_registered_ones() -> None:
    with pytest.raises(UnknownGeneratorError, match="Available: exact"):
        parse_generator_requests(generator_specs=["paraphrase-llm:3"])
    with pytest.raises(OptionError, match="NAME:COUNT"):
        parse_generator_requests(generator_specs=["exact"])


def test_plugin_generator_through_the_hook(tmp_path: Path, tag_plugin: TagPlugin) -> None:
    folder = write_sample_dataset(tmp_path / "sample")
    assert parse_generator_requests(paraphrase=2) == [("tags", 2)]
    result = CliRunner().invoke(
        app, ["dataset", "generate", str(folder), "--paraphrase", "2", "--generator", "exact:2",
              "-o", "tags.prefix=notes on", "--seed", "5"],
    )
    assert result.exit_code == 0, result.output
    rows = {q["query_id"]: q for q in read_jsonl(folder / "queries.jsonl")}
    qrels = {q["query_id"]: q for q in read_jsonl(folder / "qrels.jsonl")}
    tag_rows = [q for q in rows.values() if q.get("_generator") == "tags"]
    # The sample corpus's first two tags alphabetically: backups (memory 7), dashboards (11).
    assert [q["text"] for q in tag_rows] == ["notes on backups", "notes on dashboards"]
    assert qrels[tag_rows[0]["query_id"]]["relevant_ids"] == ["7"]
    assert tag_rows[0]["stratum"] == "paraphrase" and tag_rows[0]["_tag_count"] == 1
    assert sum(1 for q in rows.values() if q.get("_generator") == "exact") == 2
    assert load_dataset(folder).strata == ["exact", "multihop", "paraphrase"]


def test_cli_end_to_end_generates_a_valid_dataset(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "store")
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""}
    out = tmp_path / "generated"
    run = subprocess.run(
        [sys.executable, "-m", "recall_kit", "dataset", "generate", str(source), "--exact", "4", "--seed", "2",
         "--out-dir", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "exact: 4 of 4 queries written" in run.stdout
    check = subprocess.run([sys.executable, "-m", "recall_kit", "dataset", "validate", str(out)],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, check=False)
    assert check.returncode == 0, check.stderr
    assert "4 queries in 1 strata" in check.stdout
    check_exact_queries(out, SMALL_CORPUS, 4)
