"""The synthetic dataset generator (recall_kit.curate.synth) and `recall-kit dataset synth`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit.curate.synth import generate, write_synthetic_dataset
from recall_kit.dataset import load_dataset, read_dataset
from recall_kit.errors import DatasetError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def synth_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("synth") / "data"
    write_synthetic_dataset(folder, memories=600, queries=150, seed=3)
    return folder


def test_output_validates_with_the_requested_counts(synth_small: Path) -> None:
    dataset, problems = read_dataset(synth_small)
    assert problems == []
    assert dataset is not None
    assert len(dataset.corpus) == 600
    # 150 queries: 50 per stratum (150 // 3), nothing left over for exact.
    counts = {s: sum(q.stratum == s for q in dataset.queries) for s in dataset.strata}
    assert counts == {"exact": 50, "paraphrase": 50, "multihop": 50}
    assert set(dataset.qrels) == {q.query_id for q in dataset.queries}


def test_remainder_goes_to_exact() -> None:
    _, queries, qrels = generate(60, 10, seed=0)
    strata = [row["stratum"] for row in queries]
    # 10 // 3 = 3 paraphrase and 3 multihop; exact takes the other 4.
    assert strata.count("exact") == 4 and strata.count("paraphrase") == 3 and strata.count("multihop") == 3
    assert len(qrels) == 10


def test_deterministic_per_seed(tmp_path: Path) -> None:
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        write_synthetic_dataset(tmp_path / name, memories=200, queries=60, seed=seed)
    for file in ("corpus.jsonl", "queries.jsonl", "qrels.jsonl"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
    assert (tmp_path / "a" / "corpus.jsonl").read_bytes() != (tmp_path / "c" / "corpus.jsonl").read_bytes()


def test_memory_lengths_are_10_to_60_words(synth_small: Path) -> None:
    lengths = [len(m.content.split()) for m in load_dataset(synth_small).corpus]
    assert min(lengths) >= 10 and max(lengths) <= 60
    assert max(lengths) - min(lengths) >= 20  # a spread, not one fixed length


def test_exact_qrels_are_every_memory_holding_the_phrase(synth_small: Path) -> None:
    dataset = load_dataset(synth_small)
    exact = [q for q in dataset.queries if q.stratum == "exact"]
    for query in exact:
        phrase = query.text.lower()
        holding = {m.id for m in dataset.corpus if phrase in m.content.lower()}
        assert 3 <= len(query.text.split()) <= 6
        assert holding == set(dataset.qrels[query.query_id])
        assert 1 <= len(holding) <= 3


def _names(text: str) -> set[str]:
    return set(re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)?", text))


def test_paraphrase_shares_only_the_name_with_its_memory(synth_small: Path) -> None:
    dataset = load_dataset(synth_small)
    paraphrase = [q for q in dataset.queries if q.stratum == "paraphrase"]
    for query in paraphrase:
        person = re.search(r"[A-Z][a-z]+ [A-Z][a-z]+", query.text)
        assert person is not None
        for doc_id in dataset.qrels[query.query_id]:
            content = dataset.corpus.get(doc_id).content  # type: ignore[union-attr]
            assert content.startswith(person.group(0)) or person.group(0) in content
            # The fact sentence is the memory's first sentence; none of its non-name words
            # longer than 3 letters are in the question.
            fact = re.split(r"(?<=\.) ", content)[0]
            name = person.group(0)
            fact_words = set(re.findall(r"\b[a-z]{4,}\b", fact.replace(name, "")))
            query_words = set(re.findall(r"\b[a-z]{4,}\b", query.text.replace(name, "")))
            assert not fact_words & query_words, (query.query_id, fact_words & query_words)


def test_multihop_answer_is_reached_through_the_bridge(synth_small: Path) -> None:
    dataset = load_dataset(synth_small)
    multihop = [q for q in dataset.queries if q.stratum == "multihop"]
    for query in multihop:
        grades = dataset.qrels[query.query_id]
        bridges = [dataset.corpus.get(d).content for d, g in grades.items() if g == 1]  # type: ignore[union-attr]
        answers = [dataset.corpus.get(d).content for d, g in grades.items() if g == 2]  # type: ignore[union-attr]
        assert bridges and answers
        entity = _names(query.text) - {"Which", "What", "Where"}
        for bridge in bridges:  # the bridge names the query's entity ...
            assert any(name in bridge for name in entity)
        # ... and a second entity that the answer names but the question does not.
        linking = set.intersection(*(_names(b.split(".")[0]) for b in bridges))
        linking -= entity
        for answer in answers:
            assert any(name in answer.split(".")[0] for name in linking), query.query_id


def test_entities_are_shared_across_memories(synth_small: Path) -> None:
    dataset = load_dataset(synth_small)
    tags = [tag for m in dataset.corpus for tag in m.tags if tag != "people"]
    shared = {tag for tag in set(tags) if tags.count(tag) >= 5}
    assert len(shared) >= 5


def test_too_few_memories_is_a_dataset_error() -> None:
    with pytest.raises(DatasetError, match="at least 30"):
        generate(29, 10)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""}
    return subprocess.run([sys.executable, "-m", "recall_kit", "dataset", "synth", *args],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_cli_writes_a_valid_dataset_and_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    out = tmp_path / "synth_cli"
    done = _cli(str(out), "--memories", "120", "--queries", "30", "--seed", "2")
    assert done.returncode == 0, done.stderr
    assert "memories: 120" in done.stdout
    assert "queries: 30 (exact 10, paraphrase 10, multihop 10)" in done.stdout
    _, problems = read_dataset(out)
    assert problems == []
    first = (out / "corpus.jsonl").read_bytes()

    again = _cli(str(out), "--memories", "120", "--queries", "30", "--seed", "2")
    assert again.returncode == 2
    assert "not empty" in again.stderr and "Traceback" not in again.stderr

    forced = _cli(str(out), "--memories", "120", "--queries", "30", "--seed", "2", "--force")
    assert forced.returncode == 0, forced.stderr
    assert (out / "corpus.jsonl").read_bytes() == first

    small = _cli(str(tmp_path / "tiny"), "--memories", "10")
    assert small.returncode == 2
    assert small.stderr.strip().splitlines() == ["Error: synth: --memories must be at least 30 (got 10)."]
    assert json.loads((out / "qrels.jsonl").read_text().splitlines()[0])["query_id"].startswith("exact_")
