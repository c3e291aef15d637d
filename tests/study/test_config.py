"""study.toml read and checked (recall_kit.study.config `load_study`): the defaults each table gives, and
each mistake one `SpecError` naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from study.test_run import write_study  # tests/ is on sys.path (conftest.py)

from recall_kit.errors import SpecError
from recall_kit.study.config import load_study


def test_the_defaults_follow_the_hook_k_and_the_first_system(tmp_path: Path) -> None:
    config = load_study(write_study(tmp_path))
    assert config.decision_metrics == ["recall@5", "mrr@5"] and config.sweep_target == "recall@5"
    assert (config.baseline, config.seed, config.pool_depth, config.judge, config.min_queries) == ("fts5", 0, 10, "qrels", 50)
    assert config.sweep_grid == ["bm25=0.5,1"] and config.sweep_holdout == 0.5 and config.latency_sample == 5
    assert config.people is None and config.qrels is None and config.folder == (tmp_path / "out").resolve()


def test_a_grid_given_as_one_string_is_one_setting(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace('grid = ["bm25=0.5,1"]', 'grid = "bm25=0.5,1"'),
                    encoding="utf-8")
    assert load_study(path).sweep_grid == ["bm25=0.5,1"]


@pytest.mark.parametrize(("old", "new", "message"), [
    ("[cost]", "[costs]", r"unknown table \[costs\]"),
    ('name = "bm25"', 'name = "fts5"', r"two \[\[systems\]\] share a name \(fts5"),
    ("resamples = 500", "resamples = 0", r"\[study\] resamples"),
    ('queries = "dataset"', 'queries = "dataset"\nmin_queries = "many"', r"\[evaluation_set\] min_queries"),
    ("holdout = 0.5", "holdout = 0.5\nguards = 5", r"\[sweep\] guards must be a list of names"),
])
def test_each_mistake_is_one_error_naming_the_file_and_the_key(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = write_study(tmp_path)
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(SpecError, match=message) as error:
        load_study(path)
    assert "study.toml" in str(error.value) and "\n" not in str(error.value)


def test_a_missing_file_and_bad_toml_are_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such study file"):
        load_study(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("[study\n", encoding="utf-8")
    with pytest.raises(SpecError, match="bad.toml: not valid TOML"):
        load_study(tmp_path / "bad.toml")
