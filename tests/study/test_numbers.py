"""The document never states one comparison with two numbers: after a person labels 12 pairs through
the label page's session (two of them relevant), every number study.md prints for the same pair of
systems, scope and metric agrees (the bottom line, the verdicts, the head-to-head, the simpler
systems, the bounds, the holes threat), every mean agrees (the head-to-head's and the ablation's),
and the Reproduce lines print the same numbers again."""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_support import plugins

from recall_kit.study import run_study

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NUMBER = r"([+-]\d+\.\d{4})"
Key = tuple[str, str, str, str]  # (system, against, scope, metric): delta = system - against


def tables(markdown: str) -> dict[str, list[list[str]]]:
    """Each '## title' section's table rows (header and rule left out), as cells."""
    found: dict[str, list[list[str]]] = {}
    for section in markdown.split("\n## ")[1:]:
        title, _, body = section.partition("\n")
        rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
                for line in body.splitlines() if line.startswith("|")]
        found[title.strip()] = rows[2:]
    return found


class Numbers:
    """Every delta the document prints, by comparison (the sign read the way round its key says)."""

    def __init__(self) -> None:
        self.deltas: dict[Key, set[str]] = defaultdict(set)
        self.means: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.where: dict[Key, list[str]] = defaultdict(list)

    def delta(self, system: str, against: str, scope: str, metric: str, value: str, where: str) -> None:
        number = float(value)
        if system > against:  # one key per pair of systems: the other way round is the negated delta
            system, against, number = against, system, -number
        key = (system, against, scope, metric)
        self.deltas[key].add(f"{number + 0.0:+.4f}")
        self.where[key].append(where)

    def sentences(self, system: str, against: str, scope: str, text: str, where: str) -> None:
        """Each "metric +0.1234 [" in `text`: a delta of system - against."""
        for metric, value in re.findall(r"([a-z_]+@\d+) " + NUMBER + r" [\[,]", text):
            self.delta(system, against, scope, metric, value, where)


def read_numbers(markdown: str, baseline: str, ablated: str | None) -> Numbers:
    found = Numbers()
    sections = tables(markdown)
    for scope, system, metric, _, base, value, delta, *_ in sections[f"Head-to-head against {baseline}, per stratum"]:
        found.delta(system, baseline, scope, metric, delta, "head-to-head")
        found.means[(baseline, scope, metric)].add(base)
        found.means[(system, scope, metric)].add(value)
    simplest = next(title for title in sections if title.startswith("Simplest adequate system: "))
    best = simplest.removeprefix("Simplest adequate system: ").split(" against ")[0]
    for simpler, _, metric, delta, *_ in sections[simplest]:
        found.delta(simpler, best, "overall", metric, delta, "simplest table")
    for scope, system, _, because, _ in sections["Recommendation"]:
        found.sentences(system, baseline, scope, because, "recommendation table")
    for scope, _, _, metric, delta, *_ in sections.get("What the unjudged pairs can do to each verdict", []):
        verdict_system = next(row[1] for row in sections["Recommendation"] if row[0] == scope)
        found.delta(verdict_system, baseline, scope, metric, delta, "bounds table")
    bottom = markdown.split("## Bottom line", 1)[1].split("\n## ", 1)[0]
    for line in bottom.splitlines():
        verdict = re.match(r"- (Adopt|Do not adopt|Inconclusive): (\S+) against (\S+) over all queries", line)
        if verdict:
            found.sentences(verdict.group(2), verdict.group(3), "overall", line, "bottom line verdict")
        legs = re.match(r"- What the \w+ leg buys: (?:the best candidate \((\S+)\) has no \w+ leg; (\S+) \(the best "
                        r"with one\) over it|(\S+) over (\S+) \()", line)
        if legs:
            over, under = (legs.group(2), legs.group(1)) if legs.group(1) else (legs.group(3), legs.group(4))
            found.sentences(over, under, "overall", line.split(":", 1)[1], "bottom line leg")
    holes = markdown.split("\n### Holes: ", 1)[-1].split("\n### ", 1)[0] if "\n### Holes: " in markdown else ""
    for line in holes.splitlines():
        flip = re.match(r"- evidence: (\S+) \(([^)]+)\): (?:can|cannot) flip", line)
        if flip:
            verdict_system = next(row[1] for row in sections["Recommendation"] if row[0] == flip.group(1))
            for metric, value in re.findall(r"([a-z_]+@\d+) " + NUMBER + ",", line):
                found.delta(verdict_system, baseline, flip.group(1), metric, value, "holes threat")
    if ablated is not None:
        ablation = next((rows for title, rows in sections.items() if title.startswith("Ablation of ")), [])
        header = markdown.split("## Ablation of ", 1)[1].splitlines()[2]
        metrics = [cell.strip() for cell in header.strip().strip("|").split("|")][2:]
        for row in ablation:
            if row[1] == "full":
                for metric, value in zip(metrics, row[2:], strict=True):
                    found.means[(ablated, "overall", metric)].add(value)
    return found


@pytest.fixture(scope="module")
def labelled_study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, object]]:
    """The example study run, 12 pairs labelled in the label page's order (two relevant), run again."""
    from recall_kit.label.session import open_session

    root = tmp_path_factory.mktemp("labelled-study")
    shutil.copytree(EXAMPLES / "memories", root / "memories")
    shutil.copytree(EXAMPLES / "systems", root / "systems")
    text = (EXAMPLES / "study.toml").read_text(encoding="utf-8").replace("resamples = 2000", "resamples = 500")
    (root / "study.toml").write_text(text, encoding="utf-8")
    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion", "recall-kit-dense", "recall-kit-graph"):
        run_study(root / "study.toml")
        session = open_session(root / "study.toml", "ann")
        for given in range(12):
            assert session.current is not None
            session.grade(*session.current, 2 if given in (3, 8) else 0)
        study, build = run_study(root / "study.toml")
        assert {"judgments", "compare", "simpler", "bounds"} <= set(build.computed)
        yield root, study


@pytest.mark.slow
def test_every_number_the_document_prints_for_one_comparison_agrees(labelled_study: tuple[Path, object]) -> None:
    root, study = labelled_study
    markdown = (root / "study-out" / "study.md").read_text(encoding="utf-8")
    ablated = next((s.name for s in study.systems if s.retriever == study.ablation.system), None)  # type: ignore[attr-defined]
    numbers = read_numbers(markdown, study.baseline, ablated)  # type: ignore[attr-defined]
    assert len(numbers.deltas) >= 20 and any(len(places) >= 4 for places in numbers.where.values())
    disagree = {key: (values, numbers.where[key]) for key, values in numbers.deltas.items() if len(values) > 1}
    assert disagree == {}
    means = {key: values for key, values in numbers.means.items() if len(values) > 1}
    assert means == {}
    assert "ann 12 grades; 12 of their labels joined the judged set" in markdown
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
    from recall_kit.measure.result import SavedComparison

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
