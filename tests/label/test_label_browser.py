"""`recall-kit label` in real headless Chromium (driven over the DevTools protocol, tests/chromium.py):
20 pairs labelled with the keyboard alone, back, skip, help, reload and resume, the contrast view's
one click to a label, the file written, no request leaving 127.0.0.1; then the study rerun takes the
labels and its bounds and verdicts move. Skipped, with the reason, where Chromium is absent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium import Chromium, chromium_path
from study_support import plugins

from recall_kit.label.server import LabelServer
from recall_kit.label.session import open_session
from recall_kit.study import run_study

pytestmark = [
    pytest.mark.skipif(chromium_path() is None, reason="needs chromium (Debian's `chromium`; .ci/run installs it)"),
]
websocket = pytest.importorskip("websocket", reason="needs websocket-client (the test extra)")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"
STUDY = """
[study]
name = "label"
folder = "out"
hook_k = 5
baseline = "fts5"
resamples = 200

[store]
dataset = "{store}"

[[systems]]
name = "fts5"
retriever = "fts5"

[[systems]]
name = "bm25"
retriever = "bm25"

[cost]
latency_sample = 2
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        path = tmp_path_factory.mktemp("label-study") / "study.toml"
        path.write_text(STUDY.format(store=EXAMPLE.as_posix()), encoding="utf-8")
        run_study(path)
        yield path


@pytest.fixture()
def browser() -> Iterator[Chromium]:
    chromium = Chromium()
    yield chromium
    chromium.close()


class Served:
    def __init__(self, study: Path, assessor: str) -> None:
        self.session = open_session(study, assessor)
        self.server = LabelServer(self.session)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.session.close()


def _shown(browser: Chromium) -> str:
    return browser.evaluate("document.getElementById('meta').textContent")


def _given(browser: Chromium) -> int:
    text = browser.evaluate("document.getElementById('progress').textContent")
    return int(text.split(": ", 1)[1].split(" graded now")[0])


def _press_and_wait(browser: Chromium, key: str, before: str) -> str:
    browser.key(key)
    return browser.wait_for(f"(() => {{ const t = document.getElementById('meta').textContent; "
                            f"return t !== {json.dumps(before)} && t; }})()")


def test_twenty_pairs_with_the_keyboard_then_the_study_takes_them(study: Path, browser: Chromium) -> None:
    before = json.loads((study.parent / "out" / "study.json").read_text(encoding="utf-8"))
    served = Served(study, "alice")
    try:
        browser.navigate(served.server.url)
        settle = browser.wait_for("document.getElementById('settle').textContent")
        assert "judgments until no verdict can flip" in settle or settle == "No verdict can flip."
        shown = browser.wait_for("document.getElementById('meta').textContent")
        labelled = []
        for i in range(20):
            labelled.append(shown)
            shown = _press_and_wait(browser, "1" if i % 3 == 0 else "0", shown)
        assert _given(browser) == 20
        # back shows the last pair again; a new grade replaces its old one; skip moves on
        shown = _press_and_wait(browser, "b", shown)
        assert shown == labelled[-1]
        shown = _press_and_wait(browser, "2", shown)
        skipped = shown
        shown = _press_and_wait(browser, "s", shown)
        assert shown != skipped
        browser.key("?")
        assert browser.wait_for("!document.getElementById('help').hidden")
        browser.key("Escape")
        assert browser.wait_for("document.getElementById('help').hidden")
        # reload: the server holds the place; nothing graded is lost
        browser.navigate(served.server.url)
        assert browser.wait_for("document.getElementById('meta').textContent") == shown
        browser.drain()
    finally:
        served.stop()
    port = served.server.server_address[1]
    assert browser.requests and all(url.startswith(f"http://127.0.0.1:{port}/") for url in browser.requests), \
        [url for url in browser.requests if not url.startswith(f"http://127.0.0.1:{port}/")]
    path = study.parent / "out" / "labels" / "alice.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert sum(len(row["relevance"]) for row in rows) == 20 and {row["assessor"] for row in rows} == {"alice"}
    assert any(2 in row["relevance"].values() for row in rows)
    # after a Ctrl-C: a new server resumes from the file
    resumed = open_session(study, "alice")
    assert len(resumed.out) == 20 and not resumed.out.has(*resumed.current)
    resumed.close()

    with plugins("recall-kit-fts5", "recall-kit-bm25"):
        result, build = run_study(study)
    assert "judgments" in build.computed and "bounds" in build.computed
    assert not any(name.startswith("run/") for name in build.computed)  # labels change no ranking
    assert result.labels.pooled_labels >= 20
    holes_before = sum(row["holes"] for row in before["bounds"])
    holes_after = sum(row.holes for row in result.bounds)
    assert holes_after < holes_before
    markdown = (study.parent / "out" / "study.md").read_text(encoding="utf-8")
    for verdict in result.verdicts:
        assert f"| {verdict.scope} " in markdown
    assert "cannot flip" in markdown or "can flip" in markdown


def test_the_contrast_view_opens_an_unjudged_hit_in_one_click(study: Path, browser: Chromium) -> None:
    served = Served(study, "bob")
    try:
        browser.navigate(served.server.url)
        browser.wait_for("document.getElementById('meta').textContent")
        browser.key("c")
        assert browser.wait_for("!document.getElementById('contrast-view').hidden")
        target = browser.wait_for("(() => { const b = document.querySelector('button.label-hit'); "
                                  "return b && [b.dataset.query, b.dataset.doc]; })()")
        browser.evaluate("document.querySelector('button.label-hit').click()")
        assert browser.wait_for("!document.getElementById('label-view').hidden")
        shown = browser.wait_for("document.getElementById('meta').textContent")
        assert f"query {target[0]} " in shown and f"memory {target[1]}" in shown
        _press_and_wait(browser, "1", shown)
    finally:
        served.stop()
    assert served.session.out.grades[target[0]][target[1]] == 1
