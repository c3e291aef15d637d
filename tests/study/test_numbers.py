"""The document never states one comparison with two numbers: after a person labels 12 pairs through
the label page's session (two of them relevant), every number study.md prints for the same pair of
systems, scope and metric agrees (the bottom line, the verdicts, the head-to-head, the simpler
systems, the bounds, the holes threat), every mean agrees (the head-to-head's and the ablation's),
and the Reproduce lines print the same numbers again."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import disagreements, plugins, read_numbers

from recall_kit.study import run_study

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
@pytest.fixture(scope="module")
def labelled_study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, object]]:
    """The example study run, 12 pairs labelled in the label page's order (two relevant), run again."""
    from recall_kit.label.session import open_session

    root = tmp_path_factory.mktemp("labelled-study")
    shutil.copytree(EXAMPLES / "memories", root / "memories")
    shutil.copytree(EXAMPLES / "systems", root / "systems")
    text = (EXAMPLES / "study.toml").read_text(encoding="utf-8").replace("resamples = 2000", "resamples = 500")
    text = re.sub(r'^judge = .*$', 'judge = "qrels"', text, count=1, flags=re.M)  # holes for a person to label
    (root / "study.toml").write_text(text, encoding="utf-8")
    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion", "recall-kit-dense", "recall-kit-graph"):
        run_study(root / "study.toml")
        session = open_session(root / "study.toml", "ann")
        for given in range(12):
            assert session.current is not None
            session.grade(*session.current, 1 if given in (3, 8) else 0)
        session.close()
        study, build = run_study(root / "study.toml")
        assert {"judgments", "compare", "simpler", "bounds"} <= set(build.computed)
        yield root, study


@pytest.mark.slow
def test_every_number_the_document_prints_for_one_comparison_agrees(labelled_study: tuple[Path, object]) -> None:
    root, study = labelled_study
    markdown = (root / "study-out" / "study.md").read_text(encoding="utf-8")
    numbers = read_numbers(markdown, study)
    assert len(numbers.deltas) >= 20 and any(len(places) >= 4 for places in numbers.where.values())
    assert disagreements(numbers) == {}
    # the page mixes checks (pairs the qrels judge) into the 12: only the others join the judged set
    joined = re.search(r"ann 12 grades; (\d+) of their labels joined the judged set", markdown)
    assert joined and 0 < int(joined[1]) <= 12 and int(joined[1]) == study.people.added  # type: ignore[union-attr]
    unpooled = next(t for t in study.threats if t.key == "unpooled-labels")  # type: ignore[attr-defined]
    assert re.search(r"\b\d+ of the pairs some system ranked in its top 10 still carry no label", unpooled.evidence[0])


@pytest.mark.slow
def test_the_reproduce_lines_print_the_labelled_documents_numbers(labelled_study: tuple[Path, object],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The head-to-head and the verdict system's evaluation, rerun from their Reproduce lines on the
    labelled set, give the document's numbers (a copied run's result would not: it scores the old labels)."""
    import shlex

    from typer.testing import CliRunner

    from recall_kit import load_result
    from recall_kit.cli import get_app
    from recall_kit.decide.compare import SavedComparison

    root, study = labelled_study
    monkeypatch.chdir(root / "study-out")
    system = study.verdicts[0].system  # type: ignore[attr-defined]
    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion", "recall-kit-dense", "recall-kit-graph"):
        for step, out in ((f"eval/{system}", "check-eval.json"), ("compare", "check-compare.json")):
            outcome = CliRunner().invoke(get_app(), shlex.split(study.commands[step])[1:] + ["--json", out])  # type: ignore[attr-defined]
            assert outcome.exit_code == 0, outcome.output
    means = load_result("check-eval.json").means()
    assert {m: means[m] for m in study.decision_metrics} == pytest.approx(  # type: ignore[attr-defined]
        {m: study.system(system).means["overall"][m] for m in study.decision_metrics})  # type: ignore[attr-defined]
    saved = SavedComparison.load("check-compare.json")
    for row in study.head_to_head:  # type: ignore[attr-defined]
        again = next(r for r in saved.rows if (r.system, r.metric, r.scope) == (row.system, row.metric, row.scope))
        assert (again.delta, again.ci_low, again.ci_high) == pytest.approx((row.delta, row.ci_low, row.ci_high))
