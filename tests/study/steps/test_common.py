"""What each step reads of study.toml (recall_kit.study.steps.common,
recall_kit.study.steps.corpus): a system's reads rebuild its spec and its
command-line flags; file hashes cover files not there yet; the corpus and run reads follow the file."""

from __future__ import annotations

from pathlib import Path

from study.test_run import write_study  # tests/ is on sys.path (conftest.py)

from recall_kit.study.config import load_study
from recall_kit.study.steps.common import SystemReads, hashes, run_reads
from recall_kit.study.steps.corpus import corpus_reads


def test_hashes_name_each_file_and_none_for_one_not_there(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    found = hashes([tmp_path / "a.txt", tmp_path / "b.txt"])
    assert found[str(tmp_path / "b.txt")] is None
    assert found[str(tmp_path / "a.txt")] == "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"  # sha256("a")


def test_a_systems_reads_give_its_spec_and_flags(tmp_path: Path) -> None:
    config = load_study(write_study(tmp_path))
    hybrid = SystemReads.of(next(s for s in config.systems if s.name == "hybrid"))
    spec = hybrid.spec()
    assert (spec.retriever, list(spec.fusions)) == ("fts5+bm25", ["rrf"])
    assert hybrid.flags(tmp_path) == "--retriever fts5+bm25 --fusion rrf"


def test_run_reads_follow_the_study_file(tmp_path: Path) -> None:
    plain = load_study(write_study(tmp_path / "a"))
    tuned = load_study(write_study(tmp_path / "b", bm25_options='options = {bm25 = {k1 = 1.5}}'))
    assert run_reads(plain, "bm25") != run_reads(tuned, "bm25")
    assert run_reads(plain, "fts5") == run_reads(tuned, "fts5")
    assert corpus_reads(plain) == corpus_reads(tuned)
    assert "k1=1.5" in run_reads(tuned, "bm25").system.flags(tmp_path)
