"""The one door to models: `llm` models by name, the local-or-remote rule, an on-disk cache of every
call keyed by its content, retries with back-off on transient errors, and JSON answers checked
and retried. Nothing here logs a prompt: `llm`'s Python API writes to its log database only when
`response.log_to_db()` is called, and this module never calls it."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.plugin import OptionError, RecallKitError, atomic_open, debug_enabled, mask_secrets, user_cache_folder
from recall_kit_llm.calls import CallStats, Progress, effective_concurrency, ordered_map, reuse_clients
from recall_kit_llm.schema import schema_violation

#: Plugins whose models run on this machine (their top-level module names, or a module). Any other model
#: counts as remote unless the user names it in RECALL_KIT_LLM_LOCAL.
LOCAL_PLUGINS = frozenset({
    "llm_echo", "llm_sentence_transformers", "llm_gpt4all", "llm_llama_cpp", "llm_mlx",
    "llm_ollama", "llm_llamafile", "llm_embed_onnx", "llm_clip", "llm_gguf",
    "recall_kit_llm.gguf",  # this package's own llama.cpp model (recall-kit-llm[local])
})
#: Modules of llm's own plugins that reach a hosted API.
REMOTE_MODULES = frozenset({"llm.default_plugins.openai_models"})
LOCAL_ENV = "RECALL_KIT_LLM_LOCAL"
INSTALL_HINT = "see 'llm models' (or 'llm embed-models'); a model of another provider needs its plugin: llm install llm-anthropic, llm-gemini, llm-ollama, ..."


class ModelError(RecallKitError):
    """A model cannot be used (unknown, no key, remote without --allow-remote); one line."""


class TransientError(Exception):
    """Raised by a call that may succeed if tried again."""


def is_remote(model: Any) -> bool:
    """The rule: a model that needs a key, or comes from llm's OpenAI plugin, is remote; one from a
    plugin in LOCAL_PLUGINS, or named (model id or plugin module) in $RECALL_KIT_LLM_LOCAL, is
    local; any other is remote, since recall-kit cannot tell where it runs."""
    module = type(model).__module__
    declared = {item.strip() for item in os.environ.get(LOCAL_ENV, "").split(",") if item.strip()}
    if getattr(model, "needs_key", None) or module in REMOTE_MODULES:
        return True
    if model.model_id in declared or module in declared or module.split(".")[0] in declared:
        return False
    return module not in LOCAL_PLUGINS and module.split(".")[0] not in LOCAL_PLUGINS


def _check_access(model: Any, name: str, allow_remote: bool, flag: str) -> None:
    if is_remote(model) and not allow_remote:
        raise ModelError(
            f"Model {name!r} is remote: memory text would leave this machine. Pass {flag} to allow it, "
            f"or use a local model (or declare this one local with {LOCAL_ENV}={model.model_id})."
        )
    if getattr(model, "needs_key", None):
        import llm

        try:
            model.get_key()
        except llm.NeedsKeyException:
            raise ModelError(f"Model {name!r} needs a key: llm keys set {model.needs_key}"
                             + (f" (or set {model.key_env_var})" if getattr(model, "key_env_var", None) else "")
                             + ".") from None


def get_chat_model(name: str, allow_remote: bool = False, flag: str = "--allow-remote") -> Any:
    """The `llm` model called `name` (or an alias), checked: known, local or allowed, keyed."""
    if not name:
        raise OptionError("No model named: pass --model NAME (an `llm` model name; see 'llm models').")
    return _checked_model("model", name, allow_remote, flag)


def get_embedding_model(name: str, allow_remote: bool = False, flag: str = "allow_remote=true") -> Any:
    """The `llm` embedding model called `name`, checked as `get_chat_model` checks."""
    return _checked_model("embedding model", name, allow_remote, flag)


def _checked_model(kind: str, name: str, allow_remote: bool, flag: str) -> Any:
    import llm

    try:
        model = llm.get_model(name) if kind == "model" else llm.get_embedding_model(name)
    except llm.UnknownModelError:
        raise ModelError(f"Unknown {kind} {name!r}: {INSTALL_HINT}") from None
    _check_access(model, name, allow_remote, flag)
    return model


def cache_folder() -> Path:
    """`$RECALL_KIT_CACHE/llm`, else the user's cache folder + `recall-kit/llm` (never a repository)."""
    return user_cache_folder("llm")


def digest(value: Any) -> str:
    """sha256 of a value's canonical JSON."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CallCache:
    """One small JSON file per call, named by the digest of everything the answer depends on."""

    def __init__(self, folder: Path | None = None, enabled: bool = True) -> None:
        self.folder = folder if folder is not None else cache_folder()
        self.enabled = enabled

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any:
        if not self.enabled:
            return None
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))["value"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, value: Any) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path, "w", private=True) as handle:
            handle.write(json.dumps({"value": value}))


_TRANSIENT_NAMES = re.compile(r"RateLimit|Timeout|Connect|ServiceUnavailable|InternalServer|Overloaded|Temporar", re.I)
_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}


def is_transient(error: BaseException) -> bool:
    """Worth another try: rate limits, time-outs, dropped connections, 5xx answers."""
    if isinstance(error, (TransientError, TimeoutError, ConnectionError)):
        return True
    status = getattr(error, "status_code", None) or getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(status, int) and status in _TRANSIENT_STATUS:
        return True
    return bool(_TRANSIENT_NAMES.search(type(error).__name__))


def _failure_kind(error: BaseException) -> str:
    """The kind of a failed call: its exception class and HTTP status. Its message may quote the
    prompt (memory and query text), so only --debug (or RECALL_KIT_DEBUG=1) adds its first line."""
    kind = type(error).__name__
    status = getattr(error, "status_code", None) or getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(status, int):
        kind += f", HTTP {status}"
    text = str(error).strip()
    if text and debug_enabled():
        kind += f": {mask_secrets(text.splitlines()[0][:200])}"
    return kind


def retry_after(error: BaseException) -> float | None:
    """The seconds a rate-limited answer asks to wait (`Retry-After`: seconds or an HTTP date;
    `retry-after-ms`), at most 120; None when the error carries no such header."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return min(120.0, max(0.0, float(headers["retry-after-ms"]) / 1000))
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return min(120.0, max(0.0, float(value)))
        except ValueError:
            from email.utils import parsedate_to_datetime

            return min(120.0, max(0.0, parsedate_to_datetime(value).timestamp() - time.time()))
    except (TypeError, ValueError, AttributeError):
        return None


def with_retries(call: Callable[[], Any], retries: int, wait: float, what: str,
                 on_retry: Callable[[], None] | None = None) -> Any:
    """`call()`, tried again on transient errors up to `retries` times, waiting what the answer's
    Retry-After asks, else wait * 2**n (plus up to 25% jitter); any other error, or the last one,
    as one line. `on_retry()` is called before each new try (the progress line counts them)."""
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as error:  # noqa: BLE001 - every failure is classified, then one line
            if is_transient(error) and attempt < retries:
                asked = retry_after(error)
                time.sleep(asked if asked is not None else wait * 2**attempt * (1 + random.random() / 4))
                if on_retry is not None:
                    on_retry()
                continue
            import llm

            if isinstance(error, llm.NeedsKeyException):
                raise ModelError(f"{what}: {error}") from None
            tries = f"{attempt + 1} {'try' if attempt == 0 else 'tries'}"
            raise ModelError(f"{what} failed after {tries} ({_failure_kind(error)}).") from None
    raise AssertionError("unreachable")


def parse_json_answer(text: str) -> Any:
    """The JSON object in a model's answer: the whole text, else its first {...} block (models
    without schema support often wrap JSON in prose or a code fence). None when there is none."""
    text = text.strip()
    for candidate in (text, *re.findall(r"\{.*\}", text, flags=re.DOTALL)):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def estimate_tokens(text: str) -> int:
    """A model-independent estimate: one token per 4 characters (OpenAI's rule of thumb), at least
    one per word. Tokenizers differ; this is for budgeting, not billing."""
    return max(len(text.split()), (len(text) + 3) // 4)


def _takes_option(model: Any, name: str) -> bool:
    fields = getattr(getattr(model, "Options", None), "model_fields", None) or {}
    return name in fields


class JsonAsker:
    """Asks one chat model for JSON answers: cached by content, retried when the call fails
    transiently or the answer does not validate; gives up with None (counted) after `tries`.
    `ask_many` asks for many items at once (`concurrency` calls in flight), in order; answers are
    capped at `max_tokens` output tokens where the model takes that option."""

    def __init__(self, model: Any, prompt_version: str, cache: CallCache, retries: int = 4,
                 retry_wait: float = 1.0, tries: int = 3, concurrency: int | None = None,
                 max_tokens: int | None = None) -> None:
        self.model = reuse_clients(model)
        self.prompt_version = prompt_version
        self.cache = cache
        self.retries = retries
        self.retry_wait = retry_wait
        self.tries = tries
        self.max_tokens = max_tokens if max_tokens and _takes_option(model, "max_tokens") else None
        self.concurrency = effective_concurrency(model, concurrency, f"model {model.model_id!r}")
        self.stats = CallStats()

    def _text(self, system: str, prompt: str, schema: Mapping[str, Any], attempt: int) -> tuple[str, str]:
        supports_schema = bool(getattr(self.model, "supports_schema", False))
        text = prompt if supports_schema else (
            f"{prompt}\n\nAnswer with one JSON object only, matching this JSON schema:\n{json.dumps(schema)}")
        if attempt:
            text += f"\n\n(Attempt {attempt + 1}: the previous answer was not usable; follow the rules exactly.)"
        key = digest({"model": self.model.model_id, "version": self.prompt_version, "system": system,
                      "prompt": text, "schema": schema if supports_schema else None, "attempt": attempt,
                      **({"max_tokens": self.max_tokens} if self.max_tokens else {})})
        return text, key

    def _raw(self, system: str, prompt: str, schema: Mapping[str, Any], attempt: int) -> str:
        text, key = self._text(system, prompt, schema, attempt)
        cached = self.cache.get(key)
        if isinstance(cached, str):
            self.stats.add(cached=1)
            return cached
        kwargs: dict[str, Any] = {"system": system}
        if getattr(self.model, "supports_schema", False):
            kwargs["schema"] = dict(schema)
        if self.max_tokens:
            kwargs["max_tokens"] = self.max_tokens

        def call() -> tuple[str, Any]:
            # Never response.log_to_db(): no prompt reaches llm's logs.
            response = self.model.prompt(text, stream=False, **kwargs)
            return str(response.text()), response.usage()

        started = time.monotonic()
        answer, usage = with_retries(call, self.retries, self.retry_wait, f"Model {self.model.model_id!r}",
                                     on_retry=lambda: self.stats.add(retried=1))
        self.stats.add(calls=1, call_seconds=time.monotonic() - started,
                       input_tokens=getattr(usage, "input", None) or estimate_tokens(system + text),
                       output_tokens=getattr(usage, "output", None) or estimate_tokens(answer))
        self.cache.put(key, answer)  # as it arrives: an interrupted run resumes from here
        return answer

    def ask(self, system: str, prompt: str, schema: Mapping[str, Any],
            validate: Callable[[dict[str, Any]], Any]) -> Any:
        """The first answer (of `tries`) that parses as JSON and that `validate` turns into a value
        (it returns None to reject one); None when none does. An answer that breaks `schema` is
        rejected before `validate` sees it (counted in `stats.extra["off_schema"]`)."""
        for attempt in range(self.tries):
            answer = parse_json_answer(self._raw(system, prompt, schema, attempt))
            if answer is not None and schema_violation(answer, schema) is not None:
                self.stats.extra["off_schema"] = self.stats.extra.get("off_schema", 0) + 1
                answer = None
            value = validate(answer) if answer is not None else None
            if value is not None:
                return value
            self.stats.add(malformed=1)
        self.stats.add(skipped=1)
        return None

    def ask_many(self, jobs: Iterable[tuple[str, str, Mapping[str, Any], Callable[[dict[str, Any]], Any]]],
                 label: str, total: int | None = None) -> Iterator[Any]:
        """`ask(*job)` for each job, `concurrency` at once, yielded in the jobs' order (so what a
        run writes does not depend on which answer came first); a progress line on stderr."""
        return ordered_map(lambda job: self.ask(*job), jobs, self.concurrency, self.stats,
                           Progress(label, total, self.stats))

    def estimate(self, jobs: Iterable[tuple[str, str, Mapping[str, Any]]]) -> dict[str, Any]:
        """The cost of asking `jobs` once each (before a run): calls to make, answers cached, input
        tokens (estimated), output tokens (at most `max_tokens` a call, when capped), and seconds
        from this model's mean time a call in an earlier run (None when there was none)."""
        calls = cached = tokens = 0
        for system, prompt, schema in jobs:
            text, key = self._text(system, prompt, schema, 0)
            if isinstance(self.cache.get(key), str):
                cached += 1
            else:
                calls += 1
                tokens += estimate_tokens(system + text)
        mean = self.cache.get(_timing_key(self.model))
        seconds = calls * mean / self.concurrency if isinstance(mean, (int, float)) else None
        return {"calls": calls, "cached": cached, "input_tokens": tokens,
                "output_tokens_at_most": calls * self.max_tokens if self.max_tokens else None,
                "seconds": seconds, "concurrency": self.concurrency}

    def cost(self, wall_seconds: float) -> dict[str, Any]:
        """What a run cost (after it): calls, cached, retried, tokens (as the model reported them,
        estimated where it did not), seconds. Keeps this model's mean time a call for `estimate`."""
        stats = self.stats
        if stats.calls:
            self.cache.put(_timing_key(self.model), stats.call_seconds / stats.calls)
        return {"calls": stats.calls, "cached": stats.cached, "retried": stats.retried,
                "input_tokens": stats.input_tokens, "output_tokens": stats.output_tokens,
                "seconds": round(wall_seconds, 1), "concurrency": self.concurrency}


def _timing_key(model: Any) -> str:
    return digest({"timing": model.model_id})


def cost_line(what: str, cost: Mapping[str, Any], before: bool) -> str:
    """One line of a cost (from `JsonAsker.estimate` or `.cost`); ids and numbers only."""
    if before:
        seconds = cost.get("seconds")
        return (f"{what}: about {cost['calls']:,} model calls ({cost['cached']:,} answers cached), "
                f"~{cost['input_tokens']:,} input tokens"
                + (f", at most {cost['output_tokens_at_most']:,} output tokens" if cost.get("output_tokens_at_most") else "")
                + (f", about {seconds:,.0f} s at concurrency {cost['concurrency']}" if seconds is not None
                   else f"; time unknown until the first answers (concurrency {cost['concurrency']})"))
    return (f"{what}: {cost['calls']:,} model calls, {cost['cached']:,} cached, {cost['retried']:,} retried, "
            f"{cost['input_tokens']:,} input and {cost['output_tokens']:,} output tokens, "
            f"{cost['seconds']:,} s at concurrency {cost['concurrency']}")


@dataclass(frozen=True)
class ModelOptions:
    """What every model-driven part takes: `-o NAME.KEY=VALUE`, or `--model` / `--allow-remote`."""

    #: The `llm` model name or alias (`llm models` lists them).
    model: str = ""
    #: Let a remote model receive memory text.
    allow_remote: bool = False
    #: Tries per item before it is skipped (a malformed or rejected answer asks again).
    tries: int = 3
    #: Retries of a call that failed transiently, with exponential back-off from `retry_wait` s.
    retries: int = 4
    retry_wait: float = 1.0
    #: Keep every model answer in the user's cache folder: a rerun costs nothing.
    cache: bool = True
    #: Model calls in flight (`--concurrency`; None: 16); a model that runs in this process takes
    #: one at a time.
    concurrency: int | None = None
    #: Output tokens an answer may use (None: each part's own cap, sized to the JSON it asks for).
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.tries < 1 or self.retries < 0 or self.retry_wait < 0:
            raise ValueError("tries must be >= 1, retries and retry_wait >= 0")
        if (self.concurrency is not None and self.concurrency < 1) or (self.max_tokens is not None and self.max_tokens < 1):
            raise ValueError("concurrency and max_tokens must be at least 1")


def asker(options: Any, version: str, max_tokens: int | None = None) -> JsonAsker:
    """The JsonAsker of a model part: its options, and `max_tokens` unless the options set one."""
    model = get_chat_model(options.model, options.allow_remote)
    return JsonAsker(model, version, CallCache(enabled=options.cache), options.retries, options.retry_wait,
                     options.tries, concurrency=options.concurrency, max_tokens=options.max_tokens or max_tokens)
