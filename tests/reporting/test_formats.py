"""The table reporter's own drawing of tabulate's "simple" format (recall_kit.reporting.formats):
byte for byte what tabulate draws, on tables of random tricky cells, and tabulate itself for the
tables it does not take (non-ASCII, several lines, booleans, floats)."""

from __future__ import annotations

import random

import pytest
from tabulate import tabulate

from recall_kit.reporting.formats import _numeric, _simple_table, format_table
from recall_kit.types import ReportTable

CELLS = ["1", "-2.5000", " 3 ", "abc", "", "q_1", "1_0", "nan", "inf", "1e5", "x y", 7, 0, -3, "0.0000", "  ",
         "+0.05", "20000.0000", ".5", "1.", "-0", "1e-5"]


def _tabulate(headers, rows):
    columns = list(zip(*rows)) if rows else [() for _ in headers]
    align = ["right" if column and all(_numeric(cell) for cell in column) else "left" for column in columns]
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True, colalign=align or None)


@pytest.mark.parametrize("seed", range(300))
def test_the_simple_table_is_tabulates_byte_for_byte(seed):
    rng = random.Random(seed)
    width = rng.randint(1, 5)
    headers = [rng.choice(["query", "n", "map", "a", "long header"]) for _ in range(width)]
    rows = [[rng.choice(CELLS) for _ in range(width)] for _ in range(rng.randint(0, 8))]
    drawn = _simple_table(ReportTable(title="t", headers=headers, rows=rows))
    assert drawn is not None
    assert drawn == _tabulate(headers, rows)
    assert format_table(ReportTable(title="t", headers=headers, rows=rows), "simple") == drawn


@pytest.mark.parametrize("cell", ["café", "two\nlines", True, 0.5])
def test_other_tables_are_left_to_tabulate(cell):
    table = ReportTable(title="t", headers=["query", "value"], rows=[["q1", cell], ["q2", "1"]])
    assert _simple_table(table) is None
    assert format_table(table, "simple") == _tabulate(table.headers, table.rows)
