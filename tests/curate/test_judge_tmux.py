"""`recall-kit judge` in a real terminal (tmux): answer, kill the terminal mid-session, restart,
and check it resumes without losing or re-asking anything."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recall_kit.curate.judge import journal_path, read_journal
from recall_kit.testing import write_sample_dataset

ROOT = Path(__file__).resolve().parents[2]
TMUX = shutil.which("tmux")

pytestmark = pytest.mark.skipif(
    TMUX is None, reason="tmux is not installed (apt-get install tmux) so no real terminal can be driven"
)

POOL = [
    {"query_id": "exact_keys", "doc_ids": ["5", "4", "9"]},
    {"query_id": "multi_deploy", "doc_ids": ["4", "6", "12"]},
    {"query_id": "para_coffee", "doc_ids": ["10"]},
]


class Terminal:
    """One tmux server of our own (its own socket), so no other tmux session is touched."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([TMUX or "tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=check, timeout=30)

    def start(self, name: str, command: str) -> None:
        self.tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", command)

    def screen(self, name: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", name, "-S", "-2000", check=False).stdout

    def wait_for(self, name: str, pattern: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen(name)
            if re.search(pattern, screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} on the screen after {timeout}s:\n{screen}")

    def type(self, name: str, keys: str) -> None:
        self.tmux("send-keys", "-t", name, keys, "Enter")

    def kill(self, name: str) -> None:
        self.tmux("kill-session", "-t", name, check=False)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal(f"recall-kit-judge-test-{os.getpid()}")
    try:
        yield term
    finally:
        term.tmux("kill-server", check=False)


def judge_command(pool: Path, dataset: Path, out: Path) -> str:
    args = [sys.executable, "-m", "recall_kit", "judge", str(pool), "--dataset", str(dataset), "--out", str(out)]
    # The shell stays open after judge exits (sleep), so the final screen can still be read.
    return (f"cd {shlex.quote(str(ROOT))} && RECALL_KIT_LOAD_PLUGINS= {shlex.join(args)}; "
            "echo JUDGE-EXIT=$?; sleep 60")


def test_interrupted_session_resumes_without_loss(tmp_path: Path, terminal: Terminal) -> None:
    dataset = write_sample_dataset(tmp_path / "sample")
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps(row) + "\n" for row in POOL), encoding="utf-8")
    out = tmp_path / "qrels.jsonl"

    terminal.start("first", judge_command(pool, dataset, out))
    screen = terminal.wait_for("first", r"grade 1/7")
    assert "2 of 7 pairs already judged; 5 to go." in screen
    assert "[1/7] query exact_keys" in screen
    terminal.type("first", "2")
    terminal.wait_for("first", r"grade 3/7")
    terminal.type("first", "?")
    terminal.wait_for("first", r"highly relevant")
    terminal.type("first", "1")
    terminal.wait_for("first", r"grade 5/7")
    terminal.type("first", "0")
    terminal.wait_for("first", r"grade 6/7")
    # The terminal goes away mid-session (SIGHUP to judge), with a question on the screen.
    terminal.kill("first")
    time.sleep(0.5)
    assert read_journal(journal_path(out)) == [
        ("exact_keys", "5", 2), ("exact_keys", "9", 1), ("multi_deploy", "6", 0)
    ]
    saved = {row["query_id"]: row["relevance"] for row in map(json.loads, out.read_text().splitlines())}
    assert saved["exact_keys"] == {"4": 1, "5": 2, "9": 1}

    terminal.start("second", judge_command(pool, dataset, out))
    screen = terminal.wait_for("second", r"grade \d+/7")
    assert "5 of 7 pairs already judged; 2 to go." in screen
    assert "grade 6/7" in screen and "grade 1/7" not in screen and "grade 3/7" not in screen
    terminal.type("second", "3")
    terminal.wait_for("second", r"grade 7/7")
    terminal.type("second", "1")
    screen = terminal.wait_for("second", r"JUDGE-EXIT=\d+")
    assert "JUDGE-EXIT=0" in screen
    assert "0 of 7 pairs still unjudged" in screen

    final = {row["query_id"]: row["relevance"] for row in map(json.loads, out.read_text().splitlines())}
    assert final["exact_keys"] == {"4": 1, "5": 2, "9": 1}
    assert final["multi_deploy"] == {"5": 1, "4": 0, "6": 0, "12": 3}
    assert final["para_coffee"] == {"3": 1, "10": 1}
    assert final["multi_db"] == {"1": 2, "2": 1, "11": 1}
    assert len(read_journal(journal_path(out))) == 5  # every answer once: nothing asked twice
