"""The steps' outputs the document reads (issues 57, 69): each a dataclass in the module of the step
that writes it, written with `write_output` (`dataclasses.asdict`) and read back through one typed
reader (`read_output`, recall_kit.study.steps.common), never a dict read by key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from study_support import LEXICAL_PAIR, plugins

from recall_kit.errors import RecallKitError
from recall_kit.study import run_study
from recall_kit.study.result import CorpusSummary, StudyResult
from recall_kit.study.steps.agreement import AgreementOutput
from recall_kit.study.steps.bounds import BoundsOutput
from recall_kit.study.steps.common import Skipped, read_output, write_output
from recall_kit.study.steps.evaluation_set import SensitiveDropped, Strata, StratumBuilt
from recall_kit.study.steps.judgments import JudgmentsOutput, PeopleAdded
from recall_kit.study.steps.lint import LintOutput
from recall_kit.study.steps.pool import PoolOutput

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[StudyResult, Path]:
    """The example store's study (two lexical systems: no hybrid to ablate, no sweep), and its steps folder."""
    root = tmp_path_factory.mktemp("outputs")
    path = root / "study.toml"
    path.write_text(f'[study]\nname = "t"\nfolder = "out"\nresamples = 50\n[store]\ndataset = "{EXAMPLE.as_posix()}"\n'
                    '[evaluation_set]\nqueries = "dataset"\n' + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(path)
    return study, root / "out" / "steps"


#: Each typed output: the step folder and file that holds it.
OUTPUTS: list[tuple[Any, str]] = [
    (CorpusSummary, "corpus/corpus.json"), (PoolOutput, "pool/pool.json"),
    (JudgmentsOutput, "judgments/judgments.json"), (AgreementOutput, "agreement/agreement.json"),
    (LintOutput, "lint/lint.json"), (BoundsOutput, "bounds/bounds.json"), (Strata, "evaluation-set/strata.json"),
    (SensitiveDropped, "evaluation-set/sensitive.json"), (Skipped, "ablation/skipped.json"),
    (Skipped, "sweep/skipped.json"),
]


@pytest.mark.parametrize(("kind", "file"), OUTPUTS, ids=[file for _, file in OUTPUTS])
def test_a_steps_file_reads_back_into_its_type_and_is_that_type_written(example: tuple[StudyResult, Path], kind: Any,
                                                                          file: str, tmp_path: Path) -> None:
    _, steps = example
    output = read_output(kind, steps / file)
    again = tmp_path / Path(file).name
    write_output(again, output)  # the step's file is its typed output, byte for byte
    assert again.read_bytes() == (steps / file).read_bytes()


def test_what_the_document_reads_is_what_the_typed_outputs_hold(example: tuple[StudyResult, Path]) -> None:
    study, steps = example
    corpus = read_output(CorpusSummary, steps / "corpus" / "corpus.json")
    pool = read_output(PoolOutput, steps / "pool" / "pool.json")
    judgments = read_output(JudgmentsOutput, steps / "judgments" / "judgments.json")
    agreement = read_output(AgreementOutput, steps / "agreement" / "agreement.json")
    assert corpus == study.corpus and corpus.sensitive_dropped == 3  # the example store's three
    assert (pool.depth, pool.ids, pool.queries) == (study.labels.pool_depth, study.labels.pool_ids,
                                                    study.labels.pool_queries)
    assert set(pool.counts) == set(pool.unjudged_share_at_hook_k) == {"fts5", "bm25"}
    assert (judgments.source, judgments.pooled_labels, judgments.people) == ("qrels", 0, None)
    assert not agreement.measured and agreement.why == study.agreement.why
    strata = read_output(Strata, steps / "evaluation-set" / "strata.json")
    assert set(strata) == {s.name for s in study.strata} and all(isinstance(s, StratumBuilt) for s in strata.values())
    assert {name: how.built for name, how in strata.items()} == {s.name: s.built for s in study.strata}
    lint = read_output(LintOutput, steps / "lint" / "lint.json")
    assert lint.strata == {s.name: s.queries for s in study.strata}
    assert sum(sum(s.lint.values()) for s in study.strata) == sum(1 for f in lint.findings if f.get("stratum") in strata)
    bounds = read_output(BoundsOutput, steps / "bounds" / "bounds.json")
    assert [(row["candidate"], row["scope"]) for row in bounds.rows] == [(b.candidate, b.scope) for b in study.bounds]
    sensitive = read_output(SensitiveDropped, steps / "evaluation-set" / "sensitive.json")
    assert sensitive.file == "qrels.jsonl"
    assert study.labels.sensitive_dropped == ({sensitive.file: sensitive.labels_dropped} if sensitive.labels_dropped
                                              else {})
    assert study.ablation.skipped == read_output(Skipped, steps / "ablation" / "skipped.json").why
    assert study.sweep.skipped == read_output(Skipped, steps / "sweep" / "skipped.json").why


@pytest.mark.parametrize(("change", "said"), [
    ({"labels_dropped": 1, "queries_dropped": 0, "file": "qrels.jsonl", "dropped": 2},
     "sensitive.json: unknown key SensitiveDropped.dropped; not a valid recall-kit/study/2 document."),
    ({"labels_dropped": 1, "file": "qrels.jsonl"},
     "sensitive.json: missing SensitiveDropped.queries_dropped; not a valid recall-kit/study/2 document."),
])
def test_an_unknown_or_missing_key_is_one_error_naming_the_file(tmp_path: Path, change: dict[str, Any],
                                                                said: str) -> None:
    import json

    path = tmp_path / "sensitive.json"
    path.write_text(json.dumps(change), encoding="utf-8")
    with pytest.raises(RecallKitError) as raised:
        read_output(SensitiveDropped, path)
    assert str(raised.value) == said


def test_unset_fields_are_left_out_and_nested_summaries_read_back_typed(tmp_path: Path) -> None:
    judgments = JudgmentsOutput("qrels", 4, people=PeopleAdded(["alice"], 4, {"alice.jsonl": 1}))
    agreement = AgreementOutput(measured=True, against="the user's qrels", kappa=0.7, n=40, kappa_ci=[0.5, 0.9],
                                detail={"a": "second.jsonl", "kappa": 0.7, "n": 40})
    for output, unset in ((judgments, '"provenance"'), (agreement, '"why"')):
        path = tmp_path / "out.json"
        write_output(path, output)
        assert unset not in path.read_text()
        assert read_output(type(output), path) == output
    write_output(tmp_path / "j.json", judgments)
    assert isinstance(read_output(JudgmentsOutput, tmp_path / "j.json").people, PeopleAdded)
    strata = {"exact": StratumBuilt("generated from the corpus alone by 'exact'", True)}
    write_output(tmp_path / "strata.json", strata)  # a mapping of outputs, written entry by entry
    assert read_output(Strata, tmp_path / "strata.json") == strata
