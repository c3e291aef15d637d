"""`dataset split`: the halves `sweep --holdout` makes, as two dataset folders that score as the
sweep scored them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall_kit import load_result
from recall_kit.cli import app
from recall_kit.curate.split import HELD_OUT, MANIFEST, TUNING, split_dataset
from recall_kit.dataset import example_datasets, load_dataset, split_queries
from recall_kit.errors import RecallKitError

runner = CliRunner()


def _ids(folder: Path) -> list[str]:
    return [json.loads(line)["query_id"] for line in (folder / "queries.jsonl").read_text().splitlines() if line]


def test_halves_are_the_sweeps_split_with_the_sources_lines(tmp_path: Path) -> None:
    source = example_datasets()["memories"]
    manifest = split_dataset("example:memories", tmp_path / "out", 0.3, seed=4)
    tuning, held_out = split_queries(load_dataset(source), 0.3, seed=4)
    out = tmp_path / "out"
    assert _ids(out / TUNING) == tuning and _ids(out / HELD_OUT) == held_out
    assert manifest["queries"] == {TUNING: len(tuning), HELD_OUT: len(held_out)}
    assert json.loads((out / MANIFEST).read_text())["source_fingerprint"] == load_dataset(source).fingerprint
    source_lines = set((source / "queries.jsonl").read_text().splitlines())
    qrels_lines = set((source / "qrels.jsonl").read_text().splitlines())
    for side, ids in ((TUNING, tuning), (HELD_OUT, held_out)):
        assert (out / side / "corpus.jsonl").read_bytes() == (source / "corpus.jsonl").read_bytes()
        assert set((out / side / "queries.jsonl").read_text().splitlines()) <= source_lines
        kept = (out / side / "qrels.jsonl").read_text().splitlines()
        assert set(kept) <= qrels_lines and [json.loads(line)["query_id"] for line in kept] == ids
        half = load_dataset(out / side)
        assert sorted(q.query_id for q in half.queries) == sorted(ids)


def test_sensitive_rows_and_listed_ids_travel_with_each_half(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"id": f"m{i}", "content": f"note {i}", "is_sensitive": i == 0} for i in range(6)]
    (data / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (data / "sensitive_ids.txt").write_text("m1  # listed\n")
    queries = [{"query_id": f"q{i}", "text": f"note {i}", "stratum": "s"} for i in range(2, 6)]
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (data / "qrels.jsonl").write_text("".join(json.dumps({"query_id": f"q{i}", "relevant_ids": [f"m{i}"]}) + "\n"
                                              for i in range(2, 6)))
    split_dataset(data, tmp_path / "out", 0.5)
    for side in (TUNING, HELD_OUT):
        half = load_dataset(tmp_path / "out" / side)
        assert half.dropped_sensitive == 1 and half.sensitive_ids == {"m0", "m1"}
        assert len(half.queries) == 2


def test_the_held_out_half_scores_as_the_sweep_scored_it(tmp_path: Path, overlap_plugin: object) -> None:
    """The sweep's held-out means of the default and the chosen setting are eval's on the half."""
    sweep = runner.invoke(app, ["sweep", "-d", "example:memories", "-r", "overlap", "-g", "overlap.min_overlap=1,3",
                                "-t", "recall@10", "--holdout", "0.5", "--latency-sample", "0",
                                "--out-dir", str(tmp_path / "sweep"), "--report", "json"])
    assert sweep.exit_code == 0, sweep.output
    report = json.loads(sweep.stdout)
    assert runner.invoke(app, ["dataset", "split", "example:memories", str(tmp_path / "halves")]).exit_code == 0
    held_out = tmp_path / "halves" / HELD_OUT
    means = {}
    for setting in ("1", "3"):
        out = tmp_path / f"{setting}.json"
        result = runner.invoke(app, ["eval", "-d", str(held_out), "-r", "overlap", "-o", f"overlap.min_overlap={setting}",
                                     "-m", "recall@10", "--latency-sample", "0", "--json", str(out)])
        assert result.exit_code == 0, result.output
        means[setting] = load_result(out).mean("recall@10")
    assert _ids(held_out) == report["test_queries"] and _ids(tmp_path / "halves" / TUNING) == report["tuning_queries"]
    best = report["best"]["settings"]["overlap.min_overlap"]
    assert means["1"] == pytest.approx(report["default"]["test_score"], abs=1e-7)
    assert means[str(best)] == pytest.approx(report["best"]["test_score"], abs=1e-7)
    assert means["1"] != pytest.approx(means["3"], abs=1e-3)


def test_bad_requests_write_nothing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["dataset", "split", "example:memories", str(tmp_path / "a"), "--holdout", "1"])
    assert result.exit_code == 2 and "--holdout" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "a").exists()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep")
    result = runner.invoke(app, ["dataset", "split", "example:memories", str(tmp_path / "busy")])
    assert result.exit_code == 2 and "--force" in result.output
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["mine.txt"]
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "corpus.jsonl").write_text('{"id": "m1", "content": "x"}\n{oops\n')
    (tmp_path / "broken" / "queries.jsonl").write_text('{"query_id": "q", "text": "x"}\n')
    result = runner.invoke(app, ["dataset", "split", str(tmp_path / "broken"), str(tmp_path / "b")])
    assert result.exit_code == 2 and "corpus.jsonl:2" in result.output
    assert not (tmp_path / "b").exists()
    split_dataset("example:memories", tmp_path / "halves", 0.5)
    tuning = tmp_path / "halves" / TUNING
    before = {p.name: p.read_bytes() for p in tuning.iterdir()}
    with pytest.raises(RecallKitError, match="OUT .* is the input"):
        split_dataset(tuning, tuning, 0.5, force=True)
    assert {p.name: p.read_bytes() for p in tuning.iterdir()} == before
