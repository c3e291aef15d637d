"""`recall-kit label`'s server (recall_kit.label.server) without a browser: the token, the host check,
the security headers, the page's own files only, grades written as qrels with assessor and time at
once, a bad post refused in one line, the prefetched pair shown next."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from label.test_session import EXAMPLE, SENSITIVE  # tests/ is on sys.path (tests/conftest.py)

from recall_kit.dataset import read_qrels_jsonl
from recall_kit.label.server import CONTENT_SECURITY_POLICY, LabelServer
from recall_kit.label.session import open_session


@pytest.fixture()
def server(pool: Path) -> Iterator[LabelServer]:
    session = open_session(None, "alice", pool=pool, dataset=EXAMPLE)
    server = LabelServer(session)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    session.close()


def _call(url: str, body: dict | None = None, headers: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers), json.loads(response.read() or b"null") \
            if response.headers.get("Content-Type", "").startswith("application/json") else response.read()


def test_the_page_needs_the_token_and_carries_a_strict_policy(server: LabelServer) -> None:
    status, headers, body = _call(server.url)
    assert status == 200 and b"page.js" in body
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert headers["X-Content-Type-Options"] == "nosniff"
    root = server.url.rsplit("/", 2)[0] + "/"
    with pytest.raises(urllib.error.HTTPError) as missing:
        _call(root + "wrong-token/api/state")
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as rebound:
        _call(server.url + "api/state", headers={"Host": "evil.example:80"})
    assert rebound.value.code == 403


def test_the_page_loads_nothing_from_another_host() -> None:
    from importlib.resources import files

    static = files("recall_kit.label").joinpath("static")
    for name in ("page.html", "page.js", "page.css"):
        text = static.joinpath(name).read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text and "//" + "cdn" not in text
    assert "<script>" not in static.joinpath("page.html").read_text(encoding="utf-8")  # no inline code


def test_a_grade_is_written_at_once_with_assessor_and_time(server: LabelServer) -> None:
    _, _, state = _call(server.url + "api/state")
    item = state["item"]
    assert item["doc_id"] != SENSITIVE  # the sensitive memory is never offered
    _, _, after = _call(server.url + "api/grade", {"query_id": item["query_id"], "doc_id": item["doc_id"], "grade": 1})
    path = server.session.out.path
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["assessor"] == "alice" and rows[0]["relevance"] == {item["doc_id"]: 1}
    assert rows[0]["judged_at"][item["doc_id"]].endswith("+00:00")
    assert read_qrels_jsonl(path) == {item["query_id"]: {item["doc_id"]: 1}}  # plain qrels to every reader
    assert after["total"] == 1 and after["item"]["doc_id"] != item["doc_id"]


def test_a_bad_post_is_refused_in_one_line(server: LabelServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as bad:
        _call(server.url + "api/grade", {"query_id": "exact_001", "doc_id": "10", "grade": 9})
    assert bad.value.code == 400 and "grade 9" in json.loads(bad.value.read())["error"]
    request = urllib.request.Request(server.url + "api/skip", data=b"{}", headers={"Content-Type": "text/plain"})
    with pytest.raises(urllib.error.HTTPError) as form:  # a cross-site form cannot post JSON
        urllib.request.urlopen(request, timeout=10)
    assert form.value.code == 415


def test_a_grade_shows_the_pair_the_page_prefetched(server: LabelServer) -> None:
    _, _, state = _call(server.url + "api/state")
    item, ahead = state["item"], state["upcoming"]
    assert [row["doc_id"] for row in ahead] == ["11", "275", "310"]  # what the page shows on the next keys
    then = {"query_id": ahead[1]["query_id"], "doc_id": ahead[1]["doc_id"]}
    _, _, after = _call(server.url + "api/grade", {"query_id": item["query_id"], "doc_id": item["doc_id"], "grade": 0,
                                                   "then": then})
    assert (after["item"]["query_id"], after["item"]["doc_id"]) == (then["query_id"], then["doc_id"])
    assert after["item"]["grade"] is None  # a check pair never shows the qrels' grade
    assert after["progress"]["done"] == 1 and after["scale"][1]["name"] == "relevant"


def test_every_route_answers_the_pages_state_and_an_unknown_one_is_not_found(server: LabelServer) -> None:
    _, _, first = _call(server.url + "api/state")
    shown = {"query_id": first["item"]["query_id"], "doc_id": first["item"]["doc_id"]}
    _, _, noted = _call(server.url + "api/note", {**shown, "note": "which release?", "flagged": True})
    assert (noted["item"]["note"], noted["item"]["flagged"]) == ("which release?", True)
    _, _, skipped = _call(server.url + "api/skip", {})
    assert skipped["item"]["doc_id"] != shown["doc_id"] and skipped["can_go_back"]
    _, _, back = _call(server.url + "api/back", {})
    assert {"query_id": back["item"]["query_id"], "doc_id": back["item"]["doc_id"]} == shown
    ahead = back["upcoming"][-1]
    _, _, opened = _call(server.url + "api/open", {"query_id": ahead["query_id"], "doc_id": ahead["doc_id"]})
    assert (opened["item"]["query_id"], opened["item"]["doc_id"]) == (ahead["query_id"], ahead["doc_id"])
    assert _call(server.url + "api/contrast")[2] == {"queries": []}  # a pool names no challenger
    for method_body in (None, {}):
        with pytest.raises(urllib.error.HTTPError) as unknown:
            _call(server.url + "api/nothing", method_body)
        assert unknown.value.code == 404
    # what every answer said is in the file: the note and flag, no grade
    row = json.loads(server.session.out.path.read_text(encoding="utf-8").splitlines()[0])
    assert row["notes"] == {shown["doc_id"]: "which release?"} and row["relevance"] == {}


def test_a_long_memory_is_sent_up_to_a_bound_and_whole_when_asked(tmp_path: Path) -> None:
    """Issue 72: a 200 KB memory was sent whole in every answer (4.5 MB for the contrast view); now
    its first MEMORY_SHOWN characters and how many more, and the whole of it from api/memory."""
    import shutil

    from recall_kit.label.server import MEMORY_SHOWN, SNIPPET_SHOWN

    data = tmp_path / "data"
    shutil.copytree(EXAMPLE, data)
    long = "lorem ipsum <i>dolor</i> " * 8000
    rows = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if str(row["id"]) in ("10", "11"):
            row["content"] = long
    (data / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "exact_001", "doc_ids": ["10", "11", "12"]}) + "\n", encoding="utf-8")
    session = open_session(None, "alice", pool=pool, dataset=data)
    served = LabelServer(session)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    try:
        state = _call(served.url + "api/state")[2]
        item = state["item"]
        assert item["doc_id"] == "10" and len(item["memory"]) <= MEMORY_SHOWN
        assert long.startswith(item["memory"]) and item["memory_more"] == len(long) - len(item["memory"]) > 0
        assert len(json.dumps(state)) < 3 * MEMORY_SHOWN + 20_000  # not 400 KB
        graded = _call(served.url + "api/grade", {"query_id": "exact_001", "doc_id": "10", "grade": 1})[2]
        judged = graded["item"]["judged"]
        assert all(len(row["text"]) <= SNIPPET_SHOWN for row in judged)
        cut = next(row for row in judged if row["doc_id"] == "10")
        assert long.startswith(cut["text"]) and cut["text_more"] == len(long) - len(cut["text"]) > 0
        whole = _call(served.url + "api/memory", {"query_id": "exact_001", "doc_id": "11"})[2]
        assert whole["memory"] == long
        with pytest.raises(urllib.error.HTTPError) as refused:
            _call(served.url + "api/memory", {"query_id": "exact_001", "doc_id": SENSITIVE})
        assert refused.value.code == 400
    finally:
        served.shutdown()
        served.server_close()
        session.close()
