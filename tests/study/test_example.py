"""`recall-kit study run examples/study.toml`: the shipped study, its verdict and exactly the threats a
hand check of the example store finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_support import STUDY_PLUGINS, plugins

from recall_kit.study import run_study
from recall_kit.study.config import load_study
from recall_kit.study.result import StudyResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: What a hand check of the example store finds (examples/memories/README.md and the study's files):
#: - holes: the `combined` judge grades the whole pool (every system's top 10), but a model's grade is a
#:   prediction, not a label: the pairs only it graded are holes until a person labels them;
#: - no unpooled-labels: the judge graded every pooled pair;
#: - judge-agreement: the combined judge's grades were never compared with a person's (its kappa
#:   against the qrels it learnt from, cross-fitted, is in the labels line, below 0.6);
#: - small-strata: 40 queries a stratum, under 50;
#: - one-relevant: exact 1.27 and paraphrase 1.12 relevant ids a query on average (README);
#: - unreachable-leg: hybrid-graph's graph leg at weight 0.25 in a min-max convex fusion;
#: - production-prior: every memory carries an importance, and no candidate ranks with it.
#: Not threats here: no circular stratum (exact is a corpus rule, lint-clean), decisions at the hook's
#: k 5, the sweep has a holdout, no nDCG headline, production's fts5 and MiniLM are evaluated.
EXPECTED = ["holes", "judge-agreement", "small-strata", "one-relevant", "unreachable-leg", "production-prior"]


#: With test_portable.py: both read the session's one run of the example study (tests/conftest.py).
pytestmark = pytest.mark.xdist_group("example-study")


@pytest.fixture(scope="module")
def example_study(example_study_run: Path) -> tuple[Path, StudyResult]:
    """The session's run of examples/study.toml (`study run` in a clone's layout, tests/conftest.py),
    run again in this process: it computes nothing and gives the run's result. (A copy would not do:
    the steps' fingerprints hold the store's and the recipes' absolute paths.) The Reproduce lines'
    test writes its outputs into that study folder, beside what test_portable.py reads (study.md)."""
    path = example_study_run / "examples" / "study.toml"
    with plugins(*STUDY_PLUGINS):
        result, build = run_study(path)
    assert build.computed == []
    return path, result


@pytest.mark.slow
def test_the_example_study_lists_exactly_the_threats_a_hand_check_finds(example_study: tuple[Path, StudyResult]) -> None:
    _, study = example_study
    assert [threat.key for threat in study.threats] == EXPECTED


@pytest.mark.slow
def test_the_example_study_names_its_judges_measured_kappa(example_study: tuple[Path, StudyResult]) -> None:
    path, study = example_study
    labels = study.labels
    assert labels.source == "combined" and labels.judge_pairs > 0
    low, high = labels.judge_kappa_ci
    assert 0 < low <= labels.judge_kappa <= high
    markdown = (load_study(path).folder / "study.md").read_text(encoding="utf-8")
    assert f"at kappa {labels.judge_kappa:.3f} [{low:.3f}, {high:.3f}] (cross-fitted" in markdown


@pytest.mark.slow
def test_the_example_study_decides_at_the_hooks_k_with_every_candidate(example_study: tuple[Path, StudyResult]) -> None:
    path, study = example_study
    config = load_study(path)
    assert config.decision_metrics == ["recall@5", "mrr@5"]
    assert [s.name for s in study.systems] == ["fts5", "lexical", "dense", "hybrid", "hybrid-graph"]
    scopes = {row.scope for row in study.head_to_head}
    assert scopes == {"overall", "exact", "paraphrase", "multihop"}
    assert [v.scope for v in study.verdicts] == ["overall", "exact", "paraphrase", "multihop"]
    assert {v.verdict for v in study.verdicts} <= {"adopt", "do not adopt", "inconclusive"}
    assert study.ablation.system == "bm25+dense"
    assert study.sweep.holdout == 0.5 and study.sweep.test_queries > 0
    markdown = (config.folder / "study.md").read_text()
    assert markdown.startswith("# recall-kit study: example memories\n\n## Bottom line")


@pytest.mark.slow
def test_the_example_stores_sensitive_rows_reach_no_artefact(example_study: tuple[Path, StudyResult]) -> None:
    import json

    path, _ = example_study
    sensitive = [row["content"] for row in map(json.loads, (EXAMPLES / "memories" / "corpus.jsonl").read_text().splitlines())
                 if row.get("is_sensitive")]
    assert len(sensitive) == 3
    files = [file for file in load_study(path).folder.rglob("*") if file.is_file()]
    assert files and not [file for file in files for text in sensitive if text.encode() in file.read_bytes()]


def test_every_verdict_of_the_example_says_whether_the_holes_can_flip_it(example_study: tuple[Path, StudyResult]) -> None:
    path, result = example_study
    markdown = (load_study(path).folder / "study.md").read_text(encoding="utf-8")
    table = markdown.split("## What the unjudged pairs can do to each verdict", 1)[1].split("\n## ", 1)[0]
    header = [cell.strip() for cell in table.strip().splitlines()[0].split("|")]
    for verdict in result.verdicts:
        rows = [line for line in table.splitlines() if line.startswith(f"| {verdict.scope} ")]
        assert len(rows) == len(result.decision_metrics)
        # The combined judge graded the whole pool, yet its grades are predictions: the pairs only it graded
        # are unjudged, and whether they can flip the verdict is said; a row that can flips the headline.
        cells = [[cell.strip() for cell in row.split("|")] for row in rows]
        assert all(row[header.index("flip")] in ("can flip", "cannot flip") for row in cells)
        assert sum(int(row[header.index("unjudged pairs")]) for row in cells) > 0
    assert "holes" in [t.key for t in result.threats]
    assert result.recommendation.provisional


def _run_line(line: str, extra: list[str]) -> None:
    """One Reproduce line, run as printed (plus `extra`: where to write its JSON), in this process."""
    import shlex

    from typer.testing import CliRunner

    from recall_kit.cli import get_app

    words = shlex.split(line)
    assert words[0] == "recall-kit"
    outcome = CliRunner().invoke(get_app(), words[1:] + extra)
    assert outcome.exit_code == 0, f"{line}\n{outcome.output}"


def _same(saved: object, shown: object) -> None:
    """A row of a reproduced comparison against the document's: the same delta, interval and Holm p."""
    for name in ("system", "metric", "scope", "n", "delta", "ci_low", "ci_high", "p_holm", "significant"):
        assert getattr(saved, name) == pytest.approx(getattr(shown, name)), name


@pytest.mark.slow
def test_every_reproduce_line_gives_the_documents_numbers(example_study: tuple[Path, StudyResult],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each line of the document's Reproduce section, run from the study folder as printed, gives the
    numbers the document shows (the run, the evaluations, the head-to-head, the simpler systems, the
    ablation, the sweep); the others (lint, pool) run cleanly."""
    import json

    from recall_kit import load_result
    from recall_kit.decide.ablate import SavedAblation
    from recall_kit.decide.compare import SavedComparison
    from recall_kit.decide.sweep import SavedSweep

    path, study = example_study
    folder = load_study(path).folder
    monkeypatch.chdir(folder)
    commands = study.commands
    markdown = (folder / "study.md").read_text()
    assert all(f"`{line}`" in markdown for line in commands.values())
    assert {"lint", "pool", "compare", "simpler", "ablation", "sweep"} <= set(commands)
    recommendation = study.recommendation
    assert recommendation is not None
    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion", "recall-kit-dense", "recall-kit-graph"):
        for step, line in commands.items():
            kind, _, name = step.partition("/")
            out = Path(f"check-{kind}-{name or 'all'}")
            if kind in ("run", "eval"):
                _run_line(line, ["--json", f"{out}.json", "--latency-sample", "0"])
                means = load_result(f"{out}.json").means()
                # eval/NAME scores on the judged set (the document's numbers); run/NAME, on the
                # evaluation set before the judge labelled the pool, gives its own step's numbers.
                shown = (study.system(name).means["overall"] if kind == "eval"  # type: ignore[attr-defined]
                         else load_result(folder / "steps" / "run" / name / "result.json").means())
                assert {m: means[m] for m in shown} == pytest.approx(shown)
            elif kind in ("compare", "simpler"):
                _run_line(line, ["--json", f"{out}.json"])
                saved = SavedComparison.load(f"{out}.json")
                rows = (study.head_to_head if kind == "compare"
                        else [r for c in recommendation.comparisons if c.simpler != study.baseline for r in c.rows])
                assert rows
                for row in rows:
                    _same(next(r for r in saved.rows if (r.system, r.metric, r.scope) == (row.system, row.metric,
                                                                                          row.scope)), row)
            elif kind == "ablation":
                assert "--out-dir" not in line  # run as printed, it writes nothing into the study folder
                _run_line(line, ["--out-dir", str(out)])
                saved_ablation = SavedAblation.load(out / "ablation.json")
                for row in study.ablation.rows:
                    _same(next(r for r in saved_ablation.comparison.decision_rows("overall")
                               if (r.system, r.metric) == (row.system, row.metric)), row)
            elif kind == "sweep":
                _run_line(line, ["--out-dir", str(out)])
                saved_sweep = SavedSweep.load(out / "sweep.json")
                assert saved_sweep.comparison is not None
                for row in study.sweep.held_out:
                    _same(next(r for r in saved_sweep.comparison.rows
                               if (r.system, r.metric, r.scope) == (row.system, row.metric, row.scope)), row)
            elif kind == "pool":
                _run_line(line, [])
                assert json.loads(Path("pool.jsonl").read_text().splitlines()[0])["query_id"]
            else:
                _run_line(line, [])


def test_docs_count_the_example_studys_steps_and_print_the_simpler_lines_sign() -> None:
    """docs/study.md's no-op rerun line names as many steps as the example study has, and its table
    of simpler systems reads its deltas the way the `simpler` Reproduce line prints them."""
    from recall_kit.study.steps import build_graph

    docs = (EXAMPLES.parent / "docs" / "study.md").read_text(encoding="utf-8")
    steps = len(build_graph(load_study(EXAMPLES / "study.toml")).steps)
    assert f"study: nothing to do: all {steps} steps are up to date (computed nothing)." in docs
    assert "delta = the simpler system - hybrid" in docs
