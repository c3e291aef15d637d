"""The steps' outputs the document reads (issue 57): each a dataclass written with
`dataclasses.asdict` and read back through one typed reader, never a dict read by key."""

from __future__ import annotations

from pathlib import Path

from study_support import LEXICAL_PAIR, plugins

from recall_kit.study import run_study
from recall_kit.study.outputs import (
    AgreementOutput,
    JudgmentsOutput,
    PeopleAdded,
    PoolOutput,
    read_output,
    write_output,
)
from recall_kit.study.result import CorpusSummary

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"


def test_each_output_is_the_typed_summary_the_document_reads_written_as_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_text(f'[study]\nname = "t"\nfolder = "out"\nresamples = 50\n[store]\ndataset = "{EXAMPLE.as_posix()}"\n'
                    '[evaluation_set]\nqueries = "dataset"\n' + LEXICAL_PAIR)
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        study, _ = run_study(path)
    steps = tmp_path / "out" / "steps"
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
    for output, name in ((corpus, "corpus"), (pool, "pool"), (judgments, "judgments"), (agreement, "agreement")):
        again = tmp_path / f"{name}.json"
        write_output(again, output)  # the step's file is its typed output, byte for byte
        assert again.read_bytes() == (steps / name / f"{name}.json").read_bytes(), name


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
