"""An OpenAI-compatible server for tests and benchmarks: the path users take to vLLM, llama.cpp's
server, Ollama or a hosted provider (llm's own OpenAI plugin with an `api_base`), on 127.0.0.1.

It answers /v1/chat/completions and /v1/embeddings deterministically from the request alone (the
same prompt, the same answer, whatever the order or concurrency), after a configurable delay, and
answers 429 with Retry-After on a schedule. `configure_llm` points an llm home at it."""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: Words for the server's questions: none is a word of the example memories or the tests' corpora.
_WORDS = ("whereabouts", "gist", "particulars", "circumstance", "affair", "upshot", "crux", "backdrop",
          "chronicle", "episode", "outing", "undertaking")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12], 16)


def chat_answer(system: str, prompt: str) -> str:
    """The server's answer to a chat request, from its text alone: a grade for recall-kit's judge,
    a question in words of its own for the generators, adjacent capitalised names as relations for
    the extractor, else a short JSON object."""
    number = _digest(system + "\n" + prompt)
    if "judge" in system:
        return json.dumps({"grade": number % 4})
    if "search questions" in system:
        words = [_WORDS[(number >> (4 * i)) % len(_WORDS)] for i in range(3)]
        return json.dumps({"question": f"What is the {words[0]} behind the {words[1]} of {words[2]} {number % 997}?"})
    if "knowledge graph" in system:
        names = re.findall(r"\b[A-Z][a-z]+\b", prompt.split("MEMORY:", 1)[-1])
        pairs = [{"head": a, "relation": "with", "tail": b} for a, b in zip(names, names[1:], strict=False) if a != b]
        return json.dumps({"relations": pairs[:3]})
    return json.dumps({"answer": number % 100})


def embedding(text: str, dimensions: int = 32) -> list[float]:
    """Words hashed into `dimensions` buckets: texts sharing words are near."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        vector[_digest(word) % dimensions] += 1.0
    return vector


class _Server(ThreadingHTTPServer):
    #: A judge opens up to 16 connections at once; the default listen backlog of 5, with the accepting
    #: thread slow on a busy machine, turned some into connection errors, retried and counted beside
    #: the 429s (test_rate_limited_answers_are_retried_and_the_file_is_the_same, about 1 run in 10).
    request_queue_size = 128


class OpenAICompatibleServer:
    """A threaded HTTP server on 127.0.0.1 (a free port) speaking the part of OpenAI's API that llm
    uses. `delay`: seconds before each answer. `rate_limit`: request number (1, 2, ...) -> answer
    429 (with `Retry-After`/`retry-after-ms` of `retry_after` seconds). `key`: when set, a request
    without `Authorization: Bearer KEY` is answered 401, as is every request from number
    `refuse_from` on (a key revoked mid-run). Counts requests, answers (200), 429s, the most in flight."""

    def __init__(self, delay: float = 0.0, rate_limit: Callable[[int], bool] | None = None,
                 retry_after: float = 0.2, key: str | None = None, refuse_from: int | None = None) -> None:
        self.delay, self.rate_limit, self.retry_after, self.key = delay, rate_limit, retry_after, key
        self.refuse_from = refuse_from
        self.requests = self.answered = self.rate_limited = self.in_flight = self.most_in_flight = 0
        self.max_tokens_seen: list[int] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The API base, as `api_base` takes it: http://127.0.0.1:PORT/v1."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> OpenAICompatibleServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="openai-compatible", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The headers and the body are two writes: without TCP_NODELAY the body waited for the
            # client's delayed ACK of the headers, 40 ms an answer on Linux.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
                return  # no request lines on stderr

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                if status == 200:
                    with server._lock:
                        server.answered += 1
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with server._lock:
                    server.requests += 1
                    number = server.requests
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    self._answer(number, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, number: int, body: dict[str, Any]) -> None:
                if (server.key is not None and self.headers.get("Authorization") != f"Bearer {server.key}") \
                        or (server.refuse_from is not None and number >= server.refuse_from):
                    self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                    return
                if server.rate_limit is not None and server.rate_limit(number):
                    with server._lock:
                        server.rate_limited += 1
                    wait = server.retry_after
                    self._send(429, {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                               {"Retry-After": str(max(1, math.ceil(wait))) if wait >= 1 else f"{wait:g}",
                                "retry-after-ms": str(int(wait * 1000))})
                    return
                time.sleep(server.delay)
                if self.path.endswith("/chat/completions"):
                    self._chat(body)
                elif self.path.endswith("/embeddings"):
                    texts = body.get("input")
                    texts = [texts] if isinstance(texts, str) else list(texts or [])
                    self._send(200, {"object": "list", "model": body.get("model"), "data": [
                        {"object": "embedding", "index": i, "embedding": embedding(str(text))}
                        for i, text in enumerate(texts)],
                        "usage": {"prompt_tokens": sum(len(str(t)) // 4 for t in texts), "total_tokens": 0}})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def _chat(self, body: dict[str, Any]) -> None:
                messages = body.get("messages") or []
                text = {role: "\n".join(_content(m) for m in messages if m.get("role") == role)
                        for role in ("system", "user")}
                answer = chat_answer(text["system"], text["user"])
                cap = body.get("max_tokens") or body.get("max_completion_tokens")
                if isinstance(cap, int):
                    with server._lock:
                        server.max_tokens_seen.append(cap)
                    answer = answer[: cap * 4]  # a capped answer is cut, as a server cuts it
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": answer}}],
                    "usage": {"prompt_tokens": (len(text["system"]) + len(text["user"])) // 4,
                              "completion_tokens": max(1, len(answer) // 4),
                              "total_tokens": (len(text["system"]) + len(text["user"]) + len(answer)) // 4},
                })

        return Handler


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def configure_llm(home: Path, api_base: str, model_id: str = "test-server", key: str | None = None) -> None:
    """Point the llm home `home` (LLM_USER_PATH) at an OpenAI-compatible server: a chat model
    `model_id` in extra-openai-models.yaml with `api_base` (and `api_key_name` when `key` is
    given, the key in keys.json). Embedding models reach it through OPENAI_BASE_URL."""
    home.mkdir(parents=True, exist_ok=True)
    entry = [f"- model_id: {model_id}", "  model_name: test-model", f"  api_base: \"{api_base}\"",
             "  supports_schema: true"]
    if key is not None:
        entry.append("  api_key_name: recall-kit-test")
        keys = home / "keys.json"
        keys.write_text(json.dumps({"// Note": "llm keys", "recall-kit-test": key, "openai": key}))
        keys.chmod(0o600)
    (home / "extra-openai-models.yaml").write_text("\n".join(entry) + "\n")
