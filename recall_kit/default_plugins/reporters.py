"""Registers the built-in reporters (implemented in recall_kit.reporting)."""

from __future__ import annotations

from recall_kit.hookspecs import Register, hookimpl
from recall_kit.reporting.formats import CsvReporter, JsonReporter, MarkdownReporter, TableReporter
from recall_kit.reporting.html import HtmlReporter


@hookimpl
def register_reporters(register: Register) -> None:
    register("table", TableReporter)
    register("markdown", MarkdownReporter)
    register("csv", CsvReporter)
    register("json", JsonReporter)
    register("html", HtmlReporter)
