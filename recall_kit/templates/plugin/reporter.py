"""recall-kit-my-plugin: the `my-plugin` reporter for recall-kit (`--report my-plugin`)."""

from __future__ import annotations

from typing import Any

from recall_kit.plugin import Register, Report, Reporter, hookimpl


def _cell(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


class MyPluginReporter(Reporter):
    """Tab-separated values: per table a `# title` line, the headers, the rows."""

    description = "tab-separated values, one block per table"

    def render(self, report: Report) -> str:
        blocks = []
        for table in report.tables:
            lines = [f"# {_cell(table.title)}", "\t".join(_cell(h) for h in table.headers)]
            lines += ["\t".join(_cell(value) for value in row) for row in table.rows]
            blocks.append("\n".join(lines) + "\n")
        return "\n".join(blocks)


@hookimpl
def register_reporters(register: Register) -> None:
    """Register the `my-plugin` reporter."""
    register("my-plugin", MyPluginReporter)
