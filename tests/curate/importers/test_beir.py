"""The beir importer: a BEIR folder in, a dataset that validates out, with honest drop counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit.curate.importers import import_dataset, parse_importer_args
from recall_kit.dataset import read_dataset
from recall_kit.errors import DatasetError, OptionError, RecallKitError

ROOT = Path(__file__).resolve().parents[3]


def write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Kestrel", "text": "stores events in ClickHouse"},
        {"_id": "d2", "title": "", "text": "Priya leads Kestrel"},
        {"_id": "d2", "title": "", "text": "a second d2"},
        {"title": "x", "text": "no id at all"},
        {"_id": "d3", "title": "", "text": "   "},
        {"_id": 4, "title": "Driftwood", "text": "deploys on Fridays"},
    ]
    queries = [
        {"_id": "q1", "text": "where are events stored"},
        {"_id": "q2", "text": "who leads Kestrel"},
        {"_id": "q3", "text": "judged only in dev"},
        {"_id": "q5", "text": "judged only on a missing document"},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        "q1\td1\t2\n"
        "q1\td2\t0\n"
        "q2\td2\t1\n"
        "q2\t4\t1\n"
        "q2\td9\t1\n"   # d9 is not in the corpus
        "q4\td1\t1\n"   # q4 is not in queries.jsonl
        "q5\td404\t1\n",
        encoding="utf-8",
    )
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td1\t1\n", encoding="utf-8")
    return folder


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_beir_import_counts_and_validates(tmp_path: Path) -> None:
    source = write_beir(tmp_path / "beir")
    counts = import_dataset("beir", source, tmp_path / "out")
    assert counts == {
        "memories": 3,
        "queries": 2,
        "judgments": 4,
        "dropped": {
            "documents_duplicate_id": 1,
            "documents_empty": 1,
            "documents_missing_id": 1,
            "judgments_unknown_document": 2,
            "qrels_queries_not_in_queries_file": 1,
            "queries_not_in_split": 1,
            "queries_without_known_documents": 1,
        },
    }
    dataset, problems = read_dataset(tmp_path / "out")
    assert problems == []
    assert [q.query_id for q in dataset.queries] == ["q1", "q2"]
    assert {q.stratum for q in dataset.queries} == {"test"}
    # Graded scores are kept, a judged-not-relevant 0 included.
    assert dataset.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1, "4": 1}}
    assert dataset.corpus.get("d1").content == "Kestrel\nstores events in ClickHouse"
    assert dataset.corpus.get("4").content == "Driftwood\ndeploys on Fridays"
    assert all("relevance" in row for row in rows(tmp_path / "out" / "qrels.jsonl"))


def test_beir_split_and_title_options(tmp_path: Path) -> None:
    source = write_beir(tmp_path / "beir")
    counts = import_dataset("beir", source, tmp_path / "dev", {"split": "dev", "title": "false"})
    assert (counts["queries"], counts["judgments"]) == (1, 1)
    assert counts["dropped"]["queries_not_in_split"] == 3
    dataset, problems = read_dataset(tmp_path / "dev")
    assert problems == [] and dataset.qrels == {"q3": {"d1": 1}}
    assert dataset.corpus.get("d1").content == "stores events in ClickHouse"
    with pytest.raises(DatasetError, match=r"train\.tsv: not found \(splits here: dev, test\)"):
        import_dataset("beir", source, tmp_path / "train", {"split": "train"})
    assert not (tmp_path / "train").exists()
    with pytest.raises(OptionError, match="Unknown option 'splits' for importer 'beir'"):
        import_dataset("beir", source, tmp_path / "x", {"splits": "dev"})


def test_bad_json_names_file_and_line_and_leaves_nothing(tmp_path: Path) -> None:
    source = write_beir(tmp_path / "beir")
    with (source / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:7: not valid JSON"):
        import_dataset("beir", source, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["beir"]  # no temporary folder left behind


@pytest.mark.parametrize("score", ["1_0", "\u0661", "\uff11"])
def test_a_score_python_reads_and_trec_eval_would_not_is_refused(tmp_path: Path, score: str) -> None:
    # float("1_0") is 10 and float("\u0661") (Arabic-Indic one) is 1: a silent grade change.
    source = write_beir(tmp_path / "beir")
    (source / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\nq1\td1\t{score}\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"test\.tsv:2: score .* is not a number"):
        import_dataset("beir", source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_output_folder_is_refused_unless_force(tmp_path: Path) -> None:
    source = write_beir(tmp_path / "beir")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(RecallKitError, match="not empty; pass --force"):
        import_dataset("beir", source, out)
    assert (out / "keep.txt").exists()
    import_dataset("beir", source, out, force=True)
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "qrels.jsonl", "queries.jsonl"]
    empty = tmp_path / "empty"
    empty.mkdir()
    import_dataset("beir", source, empty)  # an empty folder is fine without --force
    assert read_dataset(empty)[1] == []


def test_parse_importer_args() -> None:
    from recall_kit.curate.importers.locomo import LocomoImporter

    assert parse_importer_args(["--split", "dev", "--id-col=uid", "--title"]) == {
        "split": "dev", "id_col": "uid", "title": "true",
    }
    assert parse_importer_args(["--no-captions"], LocomoImporter.Options) == {"captions": "false"}
    with pytest.raises(OptionError, match="Unexpected argument 'dev'"):
        parse_importer_args(["dev"])
    with pytest.raises(OptionError, match="given twice"):
        parse_importer_args(["--split", "a", "--split", "b"])


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": ""}
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], check=False, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_import_prints_counts_and_validates(tmp_path: Path) -> None:
    source = write_beir(tmp_path / "beir")
    out = tmp_path / "out"
    done = _cli("dataset", "import", "beir", str(source), str(out), "--split", "test")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "memories: 3" in lines and "queries: 2" in lines and "judgments: 4" in lines
    assert "dropped.judgments_unknown_document: 2" in lines
    assert _cli("dataset", "validate", str(out)).returncode == 0
    again = _cli("dataset", "import", "beir", str(source), str(out))
    assert again.returncode == 2
    assert again.stderr.strip() == f"Error: {out} is not empty; pass --force to replace it."
    unknown = _cli("dataset", "import", "beir", str(source), str(tmp_path / "o2"), "--bogus-flag", "1")
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == "Error: Unknown option 'bogus_flag' for importer 'beir'. Available: split, title."
    missing = _cli("dataset", "import", "nosuch", str(source), str(tmp_path / "o3"))
    assert missing.returncode == 2 and "Unknown importer 'nosuch'. Available: beir, locomo" in missing.stderr
