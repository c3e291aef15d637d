"""The text reporters: table (the default), markdown, csv and json."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from recall_kit.types import Report, Reporter, ReportTable

#: `four_places` as a bound method, for `map` over a column (the loop in C).
FOUR_PLACES = "{:.4f}".format


def four_places(value: float) -> str:
    """A value as every comparison and score table shows it: four decimals."""
    return FOUR_PLACES(value)


def format_table(table: ReportTable, tablefmt: str) -> str:
    """A table as text, cells exactly as given: a "+0.05" delta keeps its sign. Columns whose every
    cell is a number (or number-like text) are right-aligned; the rest left-aligned."""
    if tablefmt == "simple" and isinstance(table, StreamedTable):
        return "\n".join(table.lines())
    if tablefmt == "simple":
        fast = _simple_table(table)
        if fast is not None:
            return fast
    from tabulate import tabulate

    columns = list(zip(*table.rows)) if table.rows else [() for _ in table.headers]
    align = ["right" if column and all(_numeric(cell) for cell in column) else "left" for column in columns]
    return tabulate(table.rows, headers=table.headers, tablefmt=tablefmt, disable_numparse=True,
                    colalign=align or None)


def _numeric(value: object) -> bool:
    """A number, or text that reads as one (a column of them is right-aligned)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        float(str(value))
    except ValueError:
        return False
    return True


_DECIMALS = re.compile(r"[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?(?:\n[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)*")


def _simple_table(table: ReportTable) -> str | None:
    """tabulate's "simple" format, byte for byte, for tables of plain ASCII text and whole
    numbers, with the work per cell in C (a 20,000-query `score -q` table is 2 million cells, 60 s
    through tabulate on a loaded machine); None for any other table (tabulate draws it)."""
    rows = table.rows
    headers = [str(header) for header in table.headers]
    if any(len(row) != len(headers) for row in rows):
        return None
    columns: list[list[str]] = []
    align = []
    for column in zip(*rows, strict=True) if rows else [() for _ in headers]:
        kinds = set(map(type, column))
        if not kinds <= {str, int}:
            return None
        cells = list(map(str, column)) if int in kinds else list(column)
        text = "\n".join(cells)
        if not text.isascii() or "\x1b" in text or "\t" in text or "\r" in text or "\n" in "".join(cells):
            return None
        if " " in text:  # tabulate strips each cell
            cells = list(map(str.strip, cells))
            text = "\n".join(cells)
        # Right-aligned when every cell is a number: plain decimals are checked in one regex pass,
        # anything else (nan, 1_0, a query id) cell by cell as format_table does.
        numeric = bool(cells) and (_DECIMALS.fullmatch(text) is not None or all(_numeric(cell) for cell in column))
        columns.append(cells)
        align.append(">" if numeric else "<")
    if not "".join(headers).isascii() or any("\n" in header for header in headers):
        return None
    widths = [max(len(header) + 2, max(map(len, column), default=0)) for header, column in zip(headers, columns, strict=True)]
    line = "  ".join(f"{{:{a}{w}}}" for a, w in zip(align, widths, strict=True))
    out = [line.format(*headers).rstrip(), "  ".join("-" * width for width in widths).rstrip()]
    out += [line.format(*cells).rstrip() for cells in zip(*columns, strict=True)]
    return "\n".join(out)


def plain_cells(cells: Iterable[str]) -> bool:
    """Whether `_simple_table` draws cells like these itself, unstripped: ASCII text without
    tabs, line breaks, escape sequences or spaces (a `StreamedTable` holds only such cells)."""
    text = "".join(cells)
    return text.isascii() and not any(character in text for character in "\x1b\t\r\n ")


def numeric_cells(cells: Iterable[str]) -> bool:
    """Whether every cell reads as a number: a column of them is right-aligned."""
    return all(map(_numeric, cells))


class StreamedTable(ReportTable):
    """A table too large to hold as rows (`score -q`: a row per query, or per query and measure),
    drawn chunk by chunk in tabulate's "simple" format, byte for byte what `_simple_table` draws
    from its rows: each column's width (its widest cell) and alignment are known before the first
    line. Its cells are `plain_cells`. `rows` builds every row, for the reporters that need them."""

    def __init__(self, title: str, headers: list[str], *, widths: Sequence[int], right: Sequence[bool],
                 column_chunks: Callable[[], Iterator[Sequence[Sequence[str]]]],
                 rows_of: Callable[[], list[list[Any]]], notes: list[str] | None = None) -> None:
        self.title, self.headers, self.notes = title, list(headers), list(notes or [])
        self.widths = [max(len(header) + 2, width) for header, width in zip(headers, widths, strict=True)]
        self.right = list(right)
        #: Each chunk: the cells of some rows, column by column (in the order of `headers`).
        self.column_chunks = column_chunks
        self._rows_of = rows_of

    @property
    def rows(self) -> list[list[Any]]:  # type: ignore[override]
        return self._rows_of()

    def lines(self) -> Iterator[str]:
        """The table's text a chunk of lines at a time (joined by "\\n", no final line end)."""
        line = "  ".join(f"{{:{'>' if right else '<'}{width}}}" for right, width in zip(self.right, self.widths, strict=True))
        yield line.format(*self.headers).rstrip() + "\n" + "  ".join("-" * width for width in self.widths).rstrip()
        trailing = not self.right[-1]  # a left-aligned last column pads its cells: tabulate strips them
        for columns in self.column_chunks():
            if not columns or not len(columns[0]):
                continue
            drawn = map(line.format, *columns)
            yield "\n".join(map(str.rstrip, drawn) if trailing else drawn)


class _HeldTrailingSpace:
    """A text stream's writer that holds back trailing whitespace until more text follows: the
    stream ends as ``text.rstrip()`` would, however the text was cut into pieces."""

    def __init__(self, write: Callable[[str], Any]) -> None:
        self._write, self._held = write, ""

    def write(self, text: str) -> None:
        kept = text.rstrip()
        if kept:
            self._write(self._held + kept)
            self._held = text[len(kept):]
        else:
            self._held += text


class TableReporter(Reporter):
    """Plain-text tables for a terminal."""

    description = "plain-text tables (tabulate), for a terminal"

    def render(self, report: Report) -> str:
        buffer = io.StringIO()
        self.write(report, buffer)
        return buffer.getvalue()

    def write(self, report: Report, stream: IO[str]) -> None:
        """`render`'s text written to `stream` piece by piece: a `StreamedTable` is never held whole."""
        out = _HeldTrailingSpace(stream.write)
        for sentence in report.summary:
            out.write(f"{sentence}\n")
        if report.summary:
            out.write("\n")
        for table in report.tables:
            out.write(f"{table.title}\n")
            if isinstance(table, StreamedTable):
                for index, piece in enumerate(table.lines()):
                    out.write(f"\n{piece}" if index else piece)
                out.write("\n")
            else:
                out.write(format_table(table, "simple") + "\n")
            for note in table.notes:
                out.write(f"  {note}\n")
            out.write("\n")
        for note in report.notes:
            out.write(f"warning: {note}\n")
        stream.write("\n")


class MarkdownReporter(Reporter):
    """GitHub-flavoured Markdown, for pull requests and docs."""

    description = "GitHub-flavoured Markdown tables"

    def render(self, report: Report) -> str:
        parts = [f"# {report.title}", ""]
        if report.summary:
            parts += [f"**{sentence}**" for sentence in report.summary] + [""]
        if report.provenance:
            parts += [f"- {label}: {value}" for label, value in report.provenance] + [""]
        if report.provenance_details:
            parts += ["<details><summary>Every other setting</summary>", ""]
            parts += [f"- {label}: {value}" for label, value in report.provenance_details] + ["", "</details>", ""]
        for table in report.tables:
            parts += [f"## {table.title}", "", format_table(table, "github"), ""]
            parts += [f"_{note}_" for note in table.notes]
            if table.notes:
                parts.append("")
        if report.notes:
            parts += ["## Warnings", ""] + [f"- {note}" for note in report.notes]
        return "\n".join(parts).rstrip() + "\n"


class CsvReporter(Reporter):
    """CSV: every table, one after another, each introduced by its title row."""

    description = "CSV rows (each table preceded by a row holding its title)"

    def render(self, report: Report) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for index, table in enumerate(report.tables):
            if index:
                writer.writerow([])
            writer.writerow([f"# {table.title}"])
            writer.writerow(table.headers)
            writer.writerows(table.rows)
        return buffer.getvalue()


class JsonReporter(Reporter):
    """The machine-readable document itself (for eval, the result JSON)."""

    description = "the machine-readable JSON document"

    def render(self, report: Report) -> str:
        data = report.data or {
            "title": report.title,
            "tables": [{"title": t.title, "headers": t.headers, "rows": t.rows, "notes": t.notes}
                       for t in report.tables],
            "notes": report.notes,
        }
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def latex_escape(text: object) -> str:
    """Text made safe for LaTeX: its special characters escaped."""
    replacements = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(replacements.get(char, char) for char in str(text))


class LatexReporter(Reporter):
    """LaTeX tables (booktabs), one `table` environment per table, for papers."""

    description = "LaTeX tables (booktabs), for papers"

    def render(self, report: Report) -> str:
        parts = [f"% {latex_escape(report.title)}", "% needs \\usepackage{booktabs}", ""]
        for table in report.tables:
            parts += ["\\begin{table}[ht]", "\\centering", "\\small",
                      f"\\begin{{tabular}}{{{'l' * len(table.headers)}}}", "\\toprule",
                      " & ".join(latex_escape(h) for h in table.headers) + " \\\\", "\\midrule"]
            parts += [" & ".join(latex_escape(cell) for cell in row) + " \\\\" for row in table.rows]
            parts += ["\\bottomrule", "\\end{tabular}"]
            caption = " ".join([table.title, *table.notes])
            parts += [f"\\caption{{{latex_escape(caption)}}}", "\\end{table}", ""]
        parts += [f"% warning: {latex_escape(note)}" for note in report.notes]
        return "\n".join(parts).rstrip() + "\n"
