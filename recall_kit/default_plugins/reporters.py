"""Registers the built-in reporters (implemented in recall_kit.reporting)."""

from __future__ import annotations

from recall_kit.hookspecs import Register, hookimpl


@hookimpl
def register_reporters(register: Register) -> None:
    # Imported here: the host imports this module for every command, `recall-kit --help` included.
    from recall_kit.reporting.formats import (
        CsvReporter,
        JsonReporter,
        LatexReporter,
        MarkdownReporter,
        TableReporter,
    )
    from recall_kit.reporting.html import HtmlReporter
    from recall_kit.reporting.trec_eval import TrecEvalReporter

    register("table", TableReporter)
    register("markdown", MarkdownReporter)
    register("csv", CsvReporter)
    register("json", JsonReporter)
    register("html", HtmlReporter)
    register("latex", LatexReporter)
    register("trec_eval", TrecEvalReporter)
