"""A new user's first day: run folders that do not mix, outputs that say what they create, a
verdict in words with what was measured, one plugin's options, shell completion, old flag
spellings hidden but working, and import errors that cannot hold memory text shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall_kit import load_result
from recall_kit.cli import get_app
from recall_kit.decide.compare import Comparison, ComparisonRow
from recall_kit.decide.compare_report import comparison_report, verdict_sentences
from recall_kit.errors import OutputError, describe_plugin_exception
from recall_kit.fileio import check_run_folder
from recall_kit.reporting.formats import MarkdownReporter
from recall_kit.reporting.html import HtmlReporter

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "memories"
runner = CliRunner()


def _cli(*args: str, plugins: str = "recall-kit-fts5,recall-kit-bm25,recall-kit-fusion") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], check=False, cwd=ROOT,
                          env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": plugins},
                          capture_output=True, text=True, timeout=300)


# -- run folders ---------------------------------------------------------------------------------


def test_a_run_folder_holding_another_run_is_refused_unless_forced(tmp_path):
    folder = tmp_path / "sweep"
    assert check_run_folder(folder, ["default.json"], "sweep.json") == []  # absent
    folder.mkdir()
    for name in ("default.json", "001_bm25=0.5.json", "sweep.json", "notes.txt"):
        (folder / name).write_text("{}")
    (folder / "sweep.json").write_text(json.dumps({"points": [{"file": "001_bm25=0.5.json"}],
                                                    "default": {"file": "default.json"}}))
    # The same run again: its own files only, replaced.
    (folder / "notes.txt").unlink()
    assert check_run_folder(folder, ["default.json", "001_bm25=0.5.json"], "sweep.json") == []
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(OutputError) as refused:
        check_run_folder(folder, ["default.json", "001_fts5=2.0.json"], "sweep.json")
    assert str(refused.value) == ("--out-dir " + str(folder) + " holds files of another run (001_bm25=0.5.json, "
                                  "notes.txt): give an empty or new folder, or --force to replace that run.")
    # --force removes the other run's files (as its summary lists them), never a file it did not write.
    assert check_run_folder(folder, ["default.json", "001_fts5=2.0.json"], "sweep.json", force=True) == [
        folder / "001_bm25=0.5.json"]


def test_a_second_sweep_into_the_same_folder(tmp_path):
    out = tmp_path / "sweep"
    common = ["sweep", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "-t", "recall@10",
              "--latency-sample", "0", "--resamples", "100", "--no-progress", "--out-dir", str(out)]
    first = _cli(*common, "-g", "bm25=0.5,1")
    assert first.returncode == 0, first.stderr
    again = _cli(*common, "-g", "bm25=0.5,1")  # the same run: replaced
    assert again.returncode == 0, again.stderr
    other = _cli(*common, "-g", "fts5=2")
    assert other.returncode == 2 and other.stderr.count("\n") == 1
    assert "holds files of another run (001_bm25=0.5.json, 002_bm25=1.0.json)" in other.stderr
    forced = _cli(*common, "-g", "fts5=2", "--force")
    assert forced.returncode == 0, forced.stderr
    assert sorted(path.name for path in out.iterdir()) == ["001_fts5=2.0.json", "default.json", "sweep.json"]


# -- outputs -------------------------------------------------------------------------------------


def test_eval_says_it_creates_a_missing_folder(overlap_plugin, tiny_dataset, tmp_path):
    target = tmp_path / "new" / "deeper" / "x.json"
    result = runner.invoke(get_app(), ["eval", "-d", str(tiny_dataset), "-r", "overlap", "--json", str(target),
                                       "--latency-sample", "0"])
    assert result.exit_code == 0, result.output
    assert f"--json {target}: the folder {target.parent} does not exist; it will be created." in result.stderr
    assert target.is_file()


def test_one_spelling_per_idea_in_help_and_the_old_one_still_parses():
    app = get_app()
    for command, shown, hidden in (("pool", "--out", "--output"), ("judge", "--out", "--output"),
                                   ("ablate", "--out-dir", "--out"), ("sweep", "--out-dir", "--out"),
                                   ("score", "--output", "--out")):
        text = runner.invoke(app, [command, "--help"], terminal_width=200).output
        assert shown in text, command
        assert f"{hidden}," not in text and f"{hidden} " not in text, command
    # score writes its report to a file, as every command with a report does
    assert "Write the report to this file" in runner.invoke(app, ["score", "--help"], terminal_width=200).output


def test_shell_completion_is_offered():
    text = runner.invoke(get_app(), ["--help"]).output
    assert "--install-completion" in text and "--show-completion" in text


def test_list_options_shows_one_plugins_options():
    done = _cli("list", "options", "rrf", plugins="recall-kit-fusion")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Options of the fusion 'rrf' (-o rrf.OPTION=VALUE):"
    rows = {line.split()[0]: line.split()[1:3] for line in lines[3:]}
    assert rows["rrf.k"] == ["int", "60"] and rows["rrf.depth"] == ["int", "100"]
    unknown = _cli("list", "options", "rff", plugins="recall-kit-fusion")
    assert unknown.returncode == 2 and "Unknown name 'rff'. Available: " in unknown.stderr and "rrf" in unknown.stderr


# -- errors --------------------------------------------------------------------------------------


def test_an_import_system_error_is_shown_and_a_plugins_own_is_withheld(tmp_path, monkeypatch):
    # A plugin module named pydoc.py that imports from the standard library's pydoc: a circular import.
    package = tmp_path / "circular_plugin"
    package.mkdir()
    (package / "__init__.py").write_text("from circular_plugin.pydoc import render\n")
    (package / "pydoc.py").write_text("from circular_plugin import missing_name\nrender = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as raised:
        __import__("circular_plugin")
    described = describe_plugin_exception(raised.value)
    assert described.startswith("ImportError: cannot import name 'missing_name' from partially initialized "
                                 "module 'circular_plugin'")
    assert "withheld" not in described
    for module in [name for name in sys.modules if name.startswith("circular_plugin")]:
        monkeypatch.delitem(sys.modules, module)
    assert describe_plugin_exception(ModuleNotFoundError("No module named 'x'", name="x")) == \
        "ModuleNotFoundError: No module named 'x'"
    # Raised by a plugin itself (no module name): its message may quote a memory.
    assert describe_plugin_exception(ImportError("the memory about Alice's diagnosis")) == \
        "ImportError (message withheld, it may quote memory text; --debug shows it)"


# -- reports -------------------------------------------------------------------------------------


def _comparison() -> Comparison:
    def row(system, delta, low, high, p_holm):  # type: ignore[no-untyped-def]
        return ComparisonRow(system=system, metric="recall@5", scope="overall", n=984, baseline=0.5,
                             value=0.5 + delta, delta=delta, ci_low=low, ci_high=high,
                             prob_not_better=0.0, p_value=p_holm, p_holm=p_holm)

    rows = [row("bm25+dense", 0.013, -0.005, 0.031, 0.2), row("dense", 0.05, 0.02, 0.08, 0.001),
            row("fts5", -0.04, -0.07, -0.01, 0.01)]
    return Comparison(labels=["bm25", "bm25+dense", "dense", "fts5"], metrics=["recall@5"],
                      scopes={"overall": 984}, rows=rows, n_resamples=1000, seed=0)


def test_the_verdict_in_words():
    assert verdict_sentences(_comparison()) == [
        "bm25+dense does not beat bm25 on recall@5: +0.0130 [-0.0050, +0.0310], 984 queries, Holm p 0.2000 among 3 primary rows.",
        "dense beats bm25 on recall@5: +0.0500 [+0.0200, +0.0800], 984 queries, Holm p 0.0010 among 3 primary rows.",
        "fts5 is worse than bm25 on recall@5: -0.0400 [-0.0700, -0.0100], 984 queries, Holm p 0.0100 among 3 primary rows.",
    ]


def test_a_shared_report_says_what_it_measured(overlap_plugin, tiny_dataset, tmp_path):
    app = get_app()
    for name in ("a", "b"):
        done = runner.invoke(app, ["eval", "-d", str(tiny_dataset), "-r", "overlap", "--json",
                                   str(tmp_path / f"{name}.json"), "--latency-sample", "0", "--seed", "3"])
        assert done.exit_code == 0, done.output
    from recall_kit.decide.compare import compare_files

    comparison = compare_files([tmp_path / "a.json", tmp_path / "b.json"], n_resamples=100)
    report = comparison_report(comparison)
    first, second = comparison.labels  # the same system twice: labelled by file
    assert [label for label, _ in report.provenance] == [
        "dataset", f"system {first}", f"run of {first}", f"system {second}", f"run of {second}", "compared"]
    provenance = dict(report.provenance)
    fingerprint = (load_result(tmp_path / "a.json").fingerprint or "")[:12]
    assert provenance["dataset"].startswith("tiny (") and provenance["dataset"].endswith(f"fingerprint {fingerprint}")
    assert "recall-kit 0.1.0" in provenance[f"run of {first}"] and "seed 3" in provenance[f"run of {first}"]
    assert provenance[f"system {first}"].startswith("overlap (weight 1.0")
    page = HtmlReporter().render(report)
    sentence, answer, measured = (page.index(f'<p class="summary">{second} does not beat {first}'),
                                  page.index("Answer: who wins"), page.index("What was measured"))
    assert sentence < answer < measured < page.index("<h2>Charts</h2>")
    assert f"fingerprint {fingerprint}" in page
    markdown = MarkdownReporter().render(report)
    head = markdown[: markdown.index("## ")]
    assert f"**{second} does not beat {first} on" in head and "- dataset: tiny (" in head
