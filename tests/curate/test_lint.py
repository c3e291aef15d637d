"""`dataset lint`: one planted fault of each kind, each found with the right ids; --fix-twins;
MinHash/LSH agrees with the exact pair search; output holds ids and numbers, never text."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall_kit.cli import app
from recall_kit.curate.lint import Finding, fix_twins, lint_dataset, lint_path
from recall_kit.curate.text import jaccard, minhash_signatures, near_duplicate_pairs, shingles
from recall_kit.dataset import load_dataset

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "memories"

CORPUS = [
    {"id": 1, "content": "Backups of the Marigold database run nightly at two and are kept for thirty days."},
    {"id": 2, "content": "Morning coffee is a cortado with oat milk from the corner cafe on Mill Street every weekday."},
    # 2's near-duplicate twin: one word more, so 16 of 17 word bigrams are shared.
    {"id": 3, "content": "Morning coffee is a cortado with oat milk from the corner cafe on Mill Street every weekday morning."},
    {"id": 4, "content": "Rotate Driftwood API keys each quarter."},
    {"id": 5, "content": "The Abacus reconciliation jobs run nightly at two as well."},
    {"id": 6, "content": "Priya Raman leads the Kestrel analytics project from Leeds."},
    {"id": 7, "content": "Halyard deploys through Argo CD onto the EKS cluster."},
]
QUERIES = [
    ("exact_ok", "Priya Raman leads", "exact", {"relevant_ids": [6]}),
    # planted: the phrase is in 1 and 5, the qrels name only 1
    ("exact_dup", "run nightly at two", "exact", {"relevant_ids": [1]}),
    # planted: the phrase is in no relevant memory
    ("exact_missing", "rotate the keys weekly", "exact", {"relevant_ids": [4]}),
    ("exact_twins_ok", "cortado with oat milk", "exact", {"relevant_ids": [2, 3]}),
    # planted: {driftwood, api, keys, rotate} vs {rotate, driftwood, api, keys, quarter}: 4/5 = 0.8
    ("para_overlap", "Driftwood API keys rotate when?", "paraphrase", {"relevant_ids": [4]}),
    ("para_ok", "how do I take my first drink of the day", "paraphrase", {"relevant_ids": [2, 3]}),
    # planted: judges twin 3, leaves twin 2 unjudged (binary)
    ("para_split", "which cafe order do I usually get", "paraphrase", {"relevant_ids": [3]}),
    # planted: judges twin 2 with grade 2, leaves twin 3 unjudged (graded)
    ("multi_split", "what does the Leeds project lead drink", "multihop", {"relevance": {"2": 2, "6": 1}}),
    # planted: nothing relevant
    ("multi_none", "where is the Halyard cluster", "multihop", {"relevance": {"7": 0}}),
]
TEXTS = [row["content"] for row in CORPUS] + [text for _, text, _, _ in QUERIES]


def write_faulty(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = {
        "corpus": CORPUS,
        "queries": [{"query_id": qid, "text": text, "stratum": stratum} for qid, text, stratum, _ in QUERIES],
        "qrels": [{"query_id": qid, **judgments} for qid, _, _, judgments in QUERIES],
    }
    for name, rows in lines.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_every_planted_fault_is_found_with_its_ids(tmp_path: Path) -> None:
    report = lint_path(write_faulty(tmp_path / "faulty"), min_queries=3, multihop_max_overlap=0.18)
    assert report.twin_pairs == [("2", "3", pytest.approx(16 / 17))]
    assert report.counts() == {
        "paraphrase_overlap": 1, "multihop_one_memory": 1, "exact_not_unique": 1, "exact_not_found": 1,
        "twin_split": 2, "small_stratum": 1, "no_relevant": 1,
    }
    assert report.by_kind("paraphrase_overlap") == [
        Finding("paraphrase_overlap", "para_overlap", "paraphrase", ("4",), 0.8)
    ]
    # {leeds, project, lead, drink} vs 6's {priya, raman, leads, kestrel, analytics, project, leeds}: 2/9,
    # above the 0.18 asked for here, under the multi-hop default (0.35).
    assert report.by_kind("multihop_one_memory") == [
        Finding("multihop_one_memory", "multi_split", "multihop", ("6",), round(2 / 9, 4))
    ]
    assert lint_path(tmp_path / "faulty", min_queries=3).counts()["multihop_one_memory"] == 0
    assert report.by_kind("exact_not_unique") == [Finding("exact_not_unique", "exact_dup", "exact", ("5",), 2.0)]
    assert report.by_kind("exact_not_found") == [Finding("exact_not_found", "exact_missing", "exact", ("4",))]
    assert report.by_kind("twin_split") == [
        Finding("twin_split", "multi_split", "multihop", ("2", "3"), round(16 / 17, 4), 2),
        Finding("twin_split", "para_split", "paraphrase", ("3", "2"), round(16 / 17, 4), 1),
    ]
    assert report.by_kind("small_stratum") == [Finding("small_stratum", None, "multihop", (), 2.0)]
    assert report.by_kind("no_relevant") == [Finding("no_relevant", "multi_none", "multihop")]
    assert not report.ok


def test_a_multihop_query_answered_by_one_memory_s_words_is_flagged(tmp_path: Path) -> None:
    queries = [
        # {coffee, kestrel, lead, take}: 1/14 with 2's 11 words, 1/10 with 6's 7: a real hop, kept
        ("mh_spread", "which coffee does the Kestrel lead take", "multi-hop"),
        # {priya, raman, kestrel, analytics, project, drink}: 5/8 with 6 alone, 0 with 2: flagged
        ("mh_one", "Priya Raman Kestrel analytics project drink", "multihop"),
        # the same words as a paraphrase stratum of another name: not checked as multi-hop
        ("other", "Priya Raman Kestrel analytics project drink", "bridge"),
    ]
    folder = tmp_path / "multihop"
    folder.mkdir()
    rows = {"corpus": CORPUS,
            "queries": [{"query_id": qid, "text": text, "stratum": stratum} for qid, text, stratum in queries],
            "qrels": [{"query_id": qid, "relevant_ids": [2, 6]} for qid, _, _ in queries]}
    for name, lines in rows.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    report = lint_path(folder, min_queries=1)
    assert report.by_kind("multihop_one_memory") == [
        Finding("multihop_one_memory", "mh_one", "multihop", ("6",), 0.625)
    ]
    assert any("mh_one: overlap 0.625 with ids 6" in line for line in report.lines())
    # At a threshold of 5/8 exactly nothing is above it; the spread query passes at any threshold >= 0.1.
    assert lint_path(folder, min_queries=1, multihop_max_overlap=0.625).counts()["multihop_one_memory"] == 0
    assert lint_path(folder, min_queries=1, multihop_max_overlap=0.1).counts()["multihop_one_memory"] == 1
    assert lint_path(folder, min_queries=1, paraphrase_max_overlap=0.9).counts()["multihop_one_memory"] == 1


def test_thresholds_move_the_findings(tmp_path: Path) -> None:
    folder = write_faulty(tmp_path / "faulty")
    # Overlap exactly 0.8 is allowed at a 0.8 threshold (the rule is "above"); the twins
    # (16/17 = 0.941) are not twins at 0.95; every stratum is small at the default 30.
    report = lint_path(folder, paraphrase_max_overlap=0.8, twin_threshold=0.95)
    assert report.counts()["paraphrase_overlap"] == 0
    assert report.twin_pairs == [] and report.counts()["twin_split"] == 0
    assert [(f.stratum, f.value) for f in report.by_kind("small_stratum")] == [
        ("exact", 4.0), ("multihop", 2.0), ("paraphrase", 3.0)
    ]


def test_fix_twins_adds_the_missing_twin_with_the_judged_grade(tmp_path: Path) -> None:
    folder = write_faulty(tmp_path / "faulty")
    report = lint_path(folder, min_queries=3)
    changes = fix_twins(folder, report)
    assert changes == {"para_split": {"2": 1}, "multi_split": {"3": 2}}
    rows = {row["query_id"]: row for row in map(json.loads, (folder / "qrels.jsonl").read_text().splitlines())}
    assert rows["para_split"] == {"query_id": "para_split", "relevant_ids": [3, 2]}  # still binary, ints kept
    assert rows["multi_split"]["relevance"] == {"2": 2, "6": 1, "3": 2}
    assert rows["exact_ok"] == {"query_id": "exact_ok", "relevant_ids": [6]}  # untouched
    after = lint_path(folder, min_queries=3)
    assert after.counts()["twin_split"] == 0
    assert after.counts()["exact_not_unique"] == 1  # the other faults are not "fixed"
    assert fix_twins(folder, after) == {}


def test_fix_twins_is_transitive_and_keeps_zero_judgments() -> None:
    from recall_kit.curate.lint import missing_twin_grades
    from recall_kit.dataset import Dataset
    from recall_kit.types import Corpus, Memory

    corpus = Corpus([Memory(doc, f"memory {doc}") for doc in ("a", "b", "c", "x")])
    dataset = Dataset(Path("."), corpus, [], {"q": {"a": 3, "x": 0}, "r": {"x": 1}})
    pairs = [("a", "b", 0.9), ("b", "c", 0.85), ("c", "x", 0.9)]
    # q: a (3) -> b -> c get 3; x keeps its 0. r: x (1) -> c -> b -> a get 1.
    assert missing_twin_grades(dataset, pairs) == {"q": {"b": 3, "c": 3}, "r": {"c": 1, "b": 1, "a": 1}}


def test_cli_exit_codes_json_and_no_text(tmp_path: Path) -> None:
    folder = write_faulty(tmp_path / "faulty")
    runner = CliRunner()
    result = runner.invoke(app, ["dataset", "lint", str(folder), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["counts"]["small_stratum"] == 3 and data["ok"] is False
    text_result = runner.invoke(app, ["dataset", "lint", str(folder)])
    assert text_result.exit_code == 1
    assert "exact_dup: phrase also in unjudged ids 5" in text_result.stdout
    for output in (result.output, text_result.output):
        for text in TEXTS:
            assert text not in output
        for word in ("cortado", "Marigold", "Driftwood", "nightly"):
            assert word not in output
    fixed = runner.invoke(app, ["dataset", "lint", str(folder), "--fix-twins", "--min-queries", "1"])
    assert "fixed para_split: added 2 (grade 1)" in fixed.output
    assert "twin_split: 0" in fixed.stdout
    assert fixed.exit_code == 1  # the planted non-twin faults remain


def test_clean_dataset_exits_zero(tmp_path: Path) -> None:
    folder = tmp_path / "clean"
    folder.mkdir()
    corpus = [{"id": i, "content": f"Memory number {i} mentions item{i} and topic{i % 3}."} for i in range(1, 41)]
    queries = [{"query_id": f"e{i}", "text": f"mentions item{i} and", "stratum": "exact"} for i in range(1, 31)]
    qrels = [{"query_id": f"e{i}", "relevant_ids": [i]} for i in range(1, 31)]
    for name, rows in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    # "mentions item1 and" is a substring of "mentions item1X and"? No: item10's text is
    # "mentions item10 and", which does not contain "mentions item1 and".
    result = CliRunner().invoke(app, ["dataset", "lint", str(folder)])
    assert result.exit_code == 0, result.output
    assert "ok: no problems found" in result.stdout


def test_examples_memories_state() -> None:
    report = lint_dataset(load_dataset(EXAMPLES))
    # The bundled set is built to its rules (examples/memories/check.py): nothing to report
    # at the defaults. Its 15 twins are re-worded, not near-verbatim: at word-set (1-shingle)
    # Jaccard 0.6 some are found, and every one of them is judged consistently.
    assert report.ok, report.lines()
    # Six of its 40 hand-written multi-hop queries share 0.20-0.31 of their words with one memory
    # (the bridge's: "the engineer who built the Kestrel query UI"): under the multi-hop limit
    # (0.35), above the paraphrase one, which is why the two limits are apart.
    strict = lint_dataset(load_dataset(EXAMPLES), multihop_max_overlap=0.18)
    assert [f.query_id for f in strict.findings] == ["multi_011", "multi_017", "multi_019", "multi_020",
                                                     "multi_028", "multi_039"]
    assert report.strata == {"exact": 40, "multihop": 40, "paraphrase": 40}
    loose = lint_dataset(load_dataset(EXAMPLES), twin_threshold=0.6, shingle_size=1)
    assert len(loose.twin_pairs) >= 1
    assert loose.counts()["twin_split"] == 0


# -- near-duplicate search ----------------------------------------------------------------------


def test_shingles_and_jaccard_by_hand() -> None:
    assert shingles("A b c d", 2) == {("a", "b"), ("b", "c"), ("c", "d")}
    assert shingles("a b", 3) == {("a", "b")}
    assert jaccard(shingles("a b c d", 2), shingles("a b c e", 2)) == pytest.approx(2 / 4)


def test_minhash_estimates_jaccard() -> None:
    left = {(str(i),) for i in range(300)}
    right = {(str(i),) for i in range(100, 400)}  # J = 200 / 400 = 0.5
    signatures = minhash_signatures([left, right], num_perm=512, seed=3)
    estimate = float((signatures[0] == signatures[1]).mean())
    assert abs(estimate - 0.5) < 0.08


def test_lsh_finds_the_same_pairs_as_the_exact_search() -> None:
    rng = random.Random(11)
    vocabulary = [f"w{i}" for i in range(3000)]
    texts = [" ".join(rng.choice(vocabulary) for _ in range(25)) for _ in range(400)]
    for i in range(0, 40, 4):  # plant 10 near-duplicates: one word changed (bigram J = 22/26, or 23/25 at an end)
        words = texts[i].split()
        words[rng.randrange(len(words))] = "changed"
        texts.append(" ".join(words))
    exact = near_duplicate_pairs(texts, 0.7, method="exact")
    assert len(exact) == 10
    assert near_duplicate_pairs(texts, 0.7, method="lsh") == exact
