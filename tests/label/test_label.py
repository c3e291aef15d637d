"""`recall-kit label` (recall_kit/cli/label.py) as a command: it prints its URL, serves the page and
stops on Ctrl-C with the grades written; a folder that is no study is one line. (The server:
test_server.py; the session: test_session.py; in a browser: test_label_browser.py.)"""

from __future__ import annotations

from pathlib import Path

from label.test_server import _call
from label.test_session import EXAMPLE  # tests/ is on sys.path (tests/conftest.py)

from recall_kit.dataset import read_qrels_jsonl


def _label_cli(*args: str, **kwargs):
    import os
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "recall_kit", "label", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, **kwargs)


def test_the_command_prints_its_url_serves_and_stops_on_ctrl_c(pool: Path, tmp_path: Path) -> None:
    import signal

    process = _label_cli("--pool", str(pool), "--dataset", str(EXAMPLE), "--assessor", "carol")
    try:
        line = process.stderr.readline()
        assert line.startswith("Label at http://127.0.0.1:") and "carol.jsonl" in line
        url = line.split()[2]
        _, _, state = _call(url + "api/state")
        _call(url + "api/grade", {"query_id": state["item"]["query_id"], "doc_id": state["item"]["doc_id"], "grade": 1})
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0 and "Stopped: 1 grades in" in err
    assert read_qrels_jsonl(pool.with_name("carol.jsonl")) == {state["item"]["query_id"]: {state["item"]["doc_id"]: 1}}


def test_a_folder_that_is_no_study_is_one_line(tmp_path: Path) -> None:
    process = _label_cli(str(tmp_path))
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2 and err.count("\n") == 1 and "not a study that has run" in err
