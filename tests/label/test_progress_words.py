"""The label page's progress line, as page.js writes it from the server's progress (issue 70: an
empty queue said "0 left · time left: after two grades"). page.js runs in node with a stand-in for
the few DOM calls it makes at load."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from recall_kit.label.session import open_session
from recall_kit.label.view import progress

PAGE = Path(__file__).resolve().parents[2] / "recall_kit" / "label" / "static" / "page.js"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"

RUNNER = """
const vm = require("vm");
const fs = require("fs");
const [page, assessor, progress] = process.argv.slice(1);  // node -e: no script name
const context = vm.createContext({
  location: { pathname: "/" },
  document: { addEventListener() {}, getElementById() { return {}; } },
  Promise,
});
vm.runInContext(fs.readFileSync(page, "utf8"), context);
context.args = [assessor, JSON.parse(progress)];
process.stdout.write(vm.runInContext("progressWords(...args)", context));
"""


def words(assessor: str, state: object) -> str:
    import dataclasses

    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        state = dataclasses.asdict(state)
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to run page.js")
    done = subprocess.run([node, "-e", RUNNER, str(PAGE), assessor, json.dumps(state)], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout


def test_an_empty_queue_says_nothing_is_left_not_a_time_after_two_grades(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "exact_001", "doc_ids": ["10", "11"]}) + "\n", encoding="utf-8")
    session = open_session(None, "alice", pool=pool, dataset=EXAMPLE)
    try:
        first = words("alice", progress(session))
        assert first.startswith("alice: 0 done · ") and first.endswith(" left in the pool · time left: after two grades")
        while session.current is not None:
            session.grade(*session.current, 1)
        graded = len(session.out)
        said = words("alice", progress(session))
    finally:
        session.close()
    assert said == f"alice: {graded} done · nothing left to grade", said


def test_every_verdict_settled_says_so_and_what_is_left_in_the_pool() -> None:
    state = {"done": 7, "left": 3, "to_settle": 0, "seconds_per_pair": 4.0, "seconds_left": 0, "in_query": 0}
    assert words("bo", state) == "bo: 7 done · every verdict settled · 3 more in the pool if you wish"
    state = {**state, "to_settle": 2, "seconds_left": 8}
    assert words("bo", state) == "bo: 7 done · 2 left to settle every verdict · about 8 s left at your pace (4 s a pair)"
