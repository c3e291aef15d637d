"""The model door: the local-or-remote rule, unknown models and missing keys as one line, the
cache (a rerun costs no call), retries, malformed answers skipped and counted, nothing logged."""

from __future__ import annotations

import pytest
from recall_kit_llm.models import (
    CallCache,
    JsonAsker,
    ModelError,
    get_chat_model,
    get_embedding_model,
    is_remote,
    parse_json_answer,
    with_retries,
)


def test_local_or_remote(llm_home, monkeypatch):
    import llm

    assert not is_remote(llm.get_model("echo"))  # llm-echo: a local debug plugin
    assert is_remote(llm.get_model("gpt-4o-mini"))  # llm's OpenAI plugin, needs a key
    assert not is_remote(llm.get_model("recall-test"))  # declared in RECALL_KIT_LLM_LOCAL
    monkeypatch.delenv("RECALL_KIT_LLM_LOCAL")
    assert is_remote(llm.get_model("recall-test"))  # an unknown plugin: cannot tell, so remote


def test_remote_refused_without_the_flag_and_missing_key_named(llm_home):
    with pytest.raises(ModelError, match=r"remote: memory text would leave this machine\. Pass --allow-remote"):
        get_chat_model("gpt-4o-mini")
    with pytest.raises(ModelError, match=r"needs a key: llm keys set openai"):
        get_chat_model("gpt-4o-mini", allow_remote=True)


def test_unknown_model_names_the_fix(llm_home):
    with pytest.raises(ModelError, match=r"Unknown model 'no-such-model': see 'llm models'.*llm install"):
        get_chat_model("no-such-model")
    with pytest.raises(ModelError, match=r"Unknown embedding model 'nope'.*llm embed-models"):
        get_embedding_model("nope")


def test_parse_json_answer():
    assert parse_json_answer('{"a": 1}') == {"a": 1}
    assert parse_json_answer('Sure:\n```json\n{"a": 2}\n```') == {"a": 2}
    assert parse_json_answer("no json here") is None
    assert parse_json_answer("[1, 2]") is None


def test_transient_errors_are_retried_then_one_line():
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) < 3:
            raise TimeoutError("slow")
        return "ok"

    assert with_retries(flaky, retries=4, wait=0, what="m") == "ok" and len(attempts) == 3
    with pytest.raises(ModelError, match=r"m failed after 2 tries \(TimeoutError\)\.$"):
        with_retries(lambda: (_ for _ in ()).throw(TimeoutError("slow")), retries=1, wait=0, what="m")
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("bad request")

    with pytest.raises(ModelError, match=r"after 1 try \("):  # not transient: no retry; "1 try", not "1 tries"
        with_retries(broken, retries=4, wait=0, what="m")
    assert len(calls) == 1


def test_malformed_answers_are_retried_skipped_and_counted_and_nothing_is_logged(llm_home, tmp_path):
    import llm

    asker = JsonAsker(llm.get_model("echo"), "v1", CallCache(tmp_path / "c"), retries=0, retry_wait=0, tries=2)
    assert asker.ask("system", "prompt", {"type": "object"}, lambda answer: answer.get("grade")) is None
    assert (asker.stats.calls, asker.stats.malformed, asker.stats.skipped) == (2, 2, 1)
    again = JsonAsker(llm.get_model("echo"), "v1", CallCache(tmp_path / "c"), retries=0, retry_wait=0, tries=2)
    again.ask("system", "prompt", {"type": "object"}, lambda answer: answer.get("grade"))
    assert (again.stats.calls, again.stats.cached) == (0, 2)  # a rerun costs nothing
    # llm logs to its database only when asked: the home holds no logs.db
    assert not (llm_home / "logs.db").exists()


class _RefusedPrompt(Exception):
    """What a model SDK raises for a rejected request: its message quotes the prompt."""

    status_code = 400


def test_a_failed_call_names_its_kind_not_the_text_the_model_sent(monkeypatch):
    """The exception's text may quote the prompt (memory and query text): only its class and
    HTTP status are printed, its first line only under --debug (RECALL_KIT_DEBUG=1)."""
    secret = "the staging database password lives in the vault"

    def refused():
        raise _RefusedPrompt(f"Invalid prompt: {secret!r} violates the usage policy")

    monkeypatch.delenv("RECALL_KIT_DEBUG", raising=False)
    with pytest.raises(ModelError) as raised:
        with_retries(refused, retries=2, wait=0, what="Model 'm'")
    assert str(raised.value) == "Model 'm' failed after 1 try (_RefusedPrompt, HTTP 400)."
    monkeypatch.setenv("RECALL_KIT_DEBUG", "1")
    with pytest.raises(ModelError, match="HTTP 400: Invalid prompt: 'the staging database"):
        with_retries(refused, retries=2, wait=0, what="Model 'm'")
