"""What the label tests share: a pool of the example store's pairs (tests/label/test_session.py,
test_server.py, test_label.py); a study of the example store, fts5 against bm25, run (the browser
tests, test_label_hostile.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import LEXICAL_PAIR, plugins  # tests/ is on sys.path (tests/conftest.py)

#: A memory the example corpus flags is_sensitive: in the pool, never offered.
SENSITIVE = "152"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"
#: A study of a store (`store`: its folder): fts5 against bm25, binary grades.
STUDY = """
[study]
name = "label"
folder = "out"
hook_k = 5
baseline = "fts5"
resamples = 200

[store]
dataset = "{store}"
""" + LEXICAL_PAIR


def run_label_study(folder: Path, store: Path = EXAMPLE) -> Path:
    """`STUDY` of `store` written in `folder` and run (fts5 and bm25 loaded): its study.toml."""
    from recall_kit.study import run_study

    path = folder / "study.toml"
    path.write_text(STUDY.format(store=store.as_posix()), encoding="utf-8")
    run_study(path)
    return path


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example store's study (`STUDY`), run: its study.toml."""
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        yield run_label_study(tmp_path_factory.mktemp("label-study"))


@pytest.fixture()
def pool(tmp_path: Path) -> Path:
    """Two queries' pairs of examples/memories: a sensitive memory and an id the corpus lacks among them."""
    path = tmp_path / "pool.jsonl"
    rows = [{"query_id": "exact_001", "doc_ids": [SENSITIVE, "10", "11"]},
            {"query_id": "exact_002", "doc_ids": ["12", "no-such-id", "13"]}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
