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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.plugin import OptionError, RecallKitError, atomic_open, user_cache_folder
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


def with_retries(call: Callable[[], Any], retries: int, wait: float, what: str) -> Any:
    """`call()`, tried again on transient errors up to `retries` times, waiting wait * 2**n
    (plus up to 25% jitter) between tries; any other error, or the last one, as one line."""
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as error:  # noqa: BLE001 - every failure is classified, then one line
            if is_transient(error) and attempt < retries:
                time.sleep(wait * 2**attempt * (1 + random.random() / 4))
                continue
            import llm

            if isinstance(error, llm.NeedsKeyException):
                raise ModelError(f"{what}: {error}") from None
            detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            raise ModelError(f"{what} failed after {attempt + 1} tries ({type(error).__name__}: {detail}).") from None
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


@dataclass
class CallStats:
    """Counts of one run's model calls (printed, and written as provenance where useful)."""

    calls: int = 0
    cached: int = 0
    malformed: int = 0
    skipped: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class JsonAsker:
    """Asks one chat model for JSON answers: cached by content, retried when the call fails
    transiently or the answer does not validate; gives up with None (counted) after `tries`."""

    def __init__(self, model: Any, prompt_version: str, cache: CallCache, retries: int = 4,
                 retry_wait: float = 1.0, tries: int = 3) -> None:
        self.model = model
        self.prompt_version = prompt_version
        self.cache = cache
        self.retries = retries
        self.retry_wait = retry_wait
        self.tries = tries
        self.stats = CallStats()

    def _raw(self, system: str, prompt: str, schema: Mapping[str, Any], attempt: int) -> str:
        supports_schema = bool(getattr(self.model, "supports_schema", False))
        text = prompt if supports_schema else (
            f"{prompt}\n\nAnswer with one JSON object only, matching this JSON schema:\n{json.dumps(schema)}")
        if attempt:
            text += f"\n\n(Attempt {attempt + 1}: the previous answer was not usable; follow the rules exactly.)"
        key = digest({"model": self.model.model_id, "version": self.prompt_version, "system": system,
                      "prompt": text, "schema": schema if supports_schema else None, "attempt": attempt})
        cached = self.cache.get(key)
        if isinstance(cached, str):
            self.stats.cached += 1
            return cached

        def call() -> str:
            kwargs: dict[str, Any] = {"system": system, "stream": False}
            if supports_schema:
                kwargs["schema"] = dict(schema)
            response = self.model.prompt(text, **kwargs)
            return str(response.text())  # never response.log_to_db(): no prompt reaches llm's logs

        answer = with_retries(call, self.retries, self.retry_wait, f"Model {self.model.model_id!r}")
        self.stats.calls += 1
        self.cache.put(key, answer)
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
            self.stats.malformed += 1
        self.stats.skipped += 1
        return None
