"""The whole study file is checked before any step, in study.toml's words: names, metrics, the
sweep's grid, the judge, production's names, ranges; the user's own files named in data errors;
and `study init` writes only what `study run` accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import plugins

from recall_kit.study.validate import MAX_DEPTH, MAX_NAME_LENGTH, check_study_file
from recall_kit.testing import invoke_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"

STUDY = """
[study]
name = "checked"
folder = "out"
hook_k = 5
baseline = "fts5"
resamples = 200
exploratory_metrics = ["recall@10"]

[store]
dataset = "{store}"

[evaluation_set]
queries = "dataset"

[judging]
judge = "qrels"

[[systems]]
name = "fts5"
retriever = "fts5"

[[systems]]
name = "bm25"
retriever = "bm25"

[[systems]]
name = "hybrid"
retriever = "fts5+bm25"
fusion = "rrf"

[sweep]
system = "hybrid"
grid = ["bm25=0.5,1"]

[production]
substrate = "fts5"

[cost]
latency_sample = 0
"""


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion"):
        yield


def study(tmp_path: Path, *changes: tuple[str, str]) -> Path:
    text = STUDY.format(store=EXAMPLE.as_posix())
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def refused(path: Path) -> str:
    """`study run`'s one line, after checking that nothing was run or written."""
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0, result.output
    assert "unexpected" not in result.output
    assert not (path.parent / "out").exists()  # refused before any step
    return result.output


def test_the_example_study_file_passes_the_whole_check(tmp_path: Path) -> None:
    config = check_study_file(study(tmp_path))
    assert [s.name for s in config.systems] == ["fts5", "bm25", "hybrid"]


@pytest.mark.parametrize(("change", "said"), [
    (('exploratory_metrics = ["recall@10"]', 'exploratory_metrics = ["recal@10"]'),
     "[study] exploratory_metrics: Unknown metric 'recal'"),
    (('exploratory_metrics = ["recall@10"]', 'exploratory_metrics = ["recall"]'),
     "[study] exploratory_metrics: 'recall' names 9 metrics (recall@5, recall@10,"),
    (('baseline = "fts5"', 'baseline = "fts5"\ndecision_metrics = ["recall"]'),
     "[study] decision_metrics: 'recall' names 9 metrics"),
    (('exploratory_metrics = ["recall@10"]', 'exploratory_metrics = ["nDCG@10"]'),
     "[study] exploratory_metrics: write 'nDCG@10' as 'ndcg@10'"),
    (('baseline = "fts5"', 'baseline = "fts5"\ndecision_metrics = ["judged@5"]'),
     "[study] decision_metrics: 'judged@5' is a diagnostic"),
    (('exploratory_metrics = ["recall@10"]', 'exploratory_metrics = ["mrr@0"]'),
     "[study] exploratory_metrics: Bad cutoff in metric 'mrr@0'"),
    (('grid = ["bm25=0.5,1"]', 'grid = ["dense=0.5,1"]'), "[sweep] grid: 'dense=0.5,1': 'dense' is not a leg"),
    (('grid = ["bm25=0.5,1"]', 'grid = ["bm25=0.5,1"]\nguards = ["ndgc@10"]'), "[sweep] guards: Unknown metric"),
    (('judge = "qrels"', 'judge = "nobody"'), "[judging] judge = 'nobody': Unknown judge 'nobody'"),
    (('hook_k = 5', 'hook_k = 1000000000'), f"[study] hook_k = 1000000000 is past any ranking a study judges: at most {MAX_DEPTH}"),
    (('[judging]', '[judging]\npool_depth = 5000'), "[judging] pool_depth = 5000"),
    (('[judging]', '[judging]\nscale = "stars"'), "[judging] scale = 'stars': one of binary, graded"),
    (('queries = "dataset"', 'queries = "dataset"\nqrels = 5'), "[evaluation_set] qrels must be text, got 5"),
    (('substrate = "fts5"', 'substrate = "postgress"'), "[production] substrate = 'postgress': Unknown retriever"),
    (('substrate = "fts5"', 'substrate = "fts5"\npriors = ["importanse"]'),
     "[production] priors: 'importanse': Unknown fusion"),
    (('substrate = "fts5"', 'substrate = "fts5"\npriors = "importance"'), "[production] priors must be a list"),
    (('name = "bm25"\nretriever = "bm25"', f'name = "{"b" * 300}"\nretriever = "bm25"'),
     f"[[systems]] name '{'b' * 20}'... is 300 characters long: at most {MAX_NAME_LENGTH}"),
])
def test_a_mistake_anywhere_in_the_file_is_refused_before_any_step_in_its_words(
    tmp_path: Path, change: tuple[str, str], said: str
) -> None:
    line = refused(study(tmp_path, change))
    assert "study.toml: " + said in line
    assert "--grid" not in line and "--primary" not in line and "--guard" not in line


def test_systems_given_as_a_number_is_one_line_not_a_type_error(tmp_path: Path) -> None:
    path = study(tmp_path)
    path.write_text("systems = 5\n" + path.read_text().split("[[systems]]")[0])
    assert "systems must be an array of tables" in refused(path)
    status = invoke_cli(["study", "status", str(path)])
    assert status.exit_code == 2 and "systems must be an array of tables" in status.output


def test_more_exact_queries_than_the_corpus_yields_are_refused_naming_the_key(tmp_path: Path) -> None:
    path = study(tmp_path, ('dataset = "', 'jsonl = "'), ('memories"', 'memories/corpus.jsonl"'),
                 ('queries = "dataset"', 'queries = "generated"\nexact = 1000000'))
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert "[evaluation_set] exact = 1000000: the corpus yields only" in line and "ask for at most" in line
    assert not (tmp_path / "out" / "study.md").exists()


def test_a_bad_memory_is_named_in_the_users_file_and_line(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (EXAMPLE / "corpus.jsonl").read_text().splitlines() if line.strip()]
    rows = [{**rows[0], "id": "private-1", "is_sensitive": True}, *[r for r in rows if not r.get("is_sensitive")]]
    del rows[4]["content"]  # line 5 of the user's file; line 4 of the study's corpus.jsonl
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = study(tmp_path, (f'dataset = "{EXAMPLE.as_posix()}"', 'jsonl = "c.jsonl"'),
                 ('queries = "dataset"', 'queries = "generated"\nexact = 5'))
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'c.jsonl'}:5: \"content\" missing" in result.output
    assert "corpus.jsonl" not in result.output


def test_a_bad_query_is_named_in_the_users_queries_file(tmp_path: Path) -> None:
    queries = (EXAMPLE / "queries.jsonl").read_text().splitlines()
    row = json.loads(queries[1])
    del row["text"]
    queries[1] = json.dumps(row)
    (tmp_path / "q.jsonl").write_text("\n".join(queries) + "\n")
    (tmp_path / "r.jsonl").write_bytes((EXAMPLE / "qrels.jsonl").read_bytes())
    path = study(tmp_path, ('queries = "dataset"', 'queries = "q.jsonl"\nqrels = "r.jsonl"'))
    result = invoke_cli(["study", "run", str(path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'q.jsonl'}:2:" in result.output and "queries.jsonl" not in result.output


def test_init_refuses_a_baseline_run_would_refuse_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "study.toml"
    for flags, said in ((["--baseline", "grph"], "--baseline 'grph': Unknown retriever 'grph'"),
                        (["--baseline", "a b"], "--baseline 'a b': name one system"),
                        (["--hook-k", "1000000000"], f"--hook-k must lie between 1 and {MAX_DEPTH}")):
        result = invoke_cli(["study", "init", str(out), "--dataset", str(EXAMPLE), *flags])
        assert result.exit_code == 2, result.output
        assert said in result.output and not out.exists()


def test_init_writes_a_file_the_whole_check_accepts(tmp_path: Path) -> None:
    out = tmp_path / "study.toml"
    with plugins("recall-kit-dense", "recall-kit-graph"):
        result = invoke_cli(["study", "init", str(out), "--dataset", str(EXAMPLE), "--baseline", "bm25"])
        assert result.exit_code == 0, result.output
        config = check_study_file(out)
    assert config.baseline == "bm25" and config.production["substrate"] == "bm25"

