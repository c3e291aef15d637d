"""Model calls in flight: one bounded, ordered concurrent map for every model path (judge,
generators, llm-embed, the relation extractor), the concurrency a model allows, one HTTP client
per model for a run, and the progress line (calls done, in flight, cached, retried, time left).

Calls go through llm's sync models on a thread pool. llm's async models (its OpenAI plugin has
them) were tried through one event loop fed by the workers: 396 judge calls against the local
server took 6.4 s of calls against 2.7 s for the thread pool (2 loaded cores), so they are not used.

Results come back in the order of the items, whatever order the answers arrive in, so a run's
output is the same at any concurrency. Each answer is cached by the caller as it arrives (in the
worker), so an interrupted run resumes from every answer that came back.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Calls in flight unless --concurrency / -o NAME.concurrency says otherwise. Hosted APIs accept
#: tens at once; 16 keeps a 200 ms-a-call server over 8x faster than one at a time.
DEFAULT_CONCURRENCY = 16

#: Plugins (top-level modules) whose models run inside this process: one model, one call at a
#: time (llama.cpp, gpt4all and MLX hold one context; sentence-transformers one torch model).
#: A local *server* (Ollama, llamafile, llama.cpp's server, vLLM) is not here: it takes requests
#: in flight like a hosted API.
IN_PROCESS_PLUGINS = frozenset({
    "llm_echo", "llm_sentence_transformers", "llm_gpt4all", "llm_llama_cpp", "llm_mlx", "llm_embed_onnx",
    "llm_clip", "recall_kit_llm",
})


def in_process(model: Any) -> bool:
    """Whether `model` runs inside this process (its `in_process` attribute, else its plugin)."""
    declared = getattr(model, "in_process", None)
    if isinstance(declared, bool):
        return declared
    return type(model).__module__.split(".")[0] in IN_PROCESS_PLUGINS


def effective_concurrency(model: Any, asked: int | None, what: str, say: Callable[[str], None] | None = None) -> int:
    """The calls in flight for `model`: `asked` (None: DEFAULT_CONCURRENCY), or 1 for a model that
    runs in this process (it is one model: calls at once would only queue for it, or crash it);
    said on stderr when a larger number was asked for."""
    if asked is not None and asked < 1:
        raise ValueError("concurrency must be at least 1")
    if in_process(model):
        if asked is not None and asked > 1:
            (say or _stderr)(f"{what}: {model.model_id} runs in this process: one call at a time "
                             f"(concurrency {asked} applies to servers and hosted models).")
        return 1
    return asked if asked is not None else DEFAULT_CONCURRENCY


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class CallStats:
    """Counts of one run's model calls, safe to bump from the workers (`add`); printed, and
    written as provenance where useful."""

    calls: int = 0
    cached: int = 0
    malformed: int = 0
    skipped: int = 0
    retried: int = 0
    in_flight: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    call_seconds: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **amounts: float) -> None:
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)


class Progress:
    """The progress line of a concurrent map, printed on stderr every RECALL_KIT_PROGRESS_INTERVAL
    seconds (default 10; 2 on a terminal, where it goes above the host's own bar) and at the end
    of a run that printed one."""

    def __init__(self, label: str, total: int | None, counts: CallStats, stream: Any = None) -> None:
        self.label, self.total, self.counts = label, total, counts
        self.stream = stream if stream is not None else sys.stderr
        default = "2" if getattr(self.stream, "isatty", lambda: False)() else "10"
        try:
            self.interval = float(os.environ.get("RECALL_KIT_PROGRESS_INTERVAL", default))
        except ValueError:
            self.interval = float(default)
        self.started = self.last = time.monotonic()
        self.items = 0
        self.shown = False

    def line(self) -> str:
        """"judge: 120/1000 done (112 calls, 8 cached), 16 in flight, 2 retried, about 1m10s left"."""
        counts, elapsed = self.counts, time.monotonic() - self.started
        text = (f"{self.label}: {self.items}" + (f"/{self.total}" if self.total is not None else "")
                + f" done ({counts.calls} calls, {counts.cached} cached), {counts.in_flight} in flight, "
                f"{counts.retried} retried")
        if self.total and self.items:
            text += f", about {_duration(elapsed / self.items * (self.total - self.items))} left"
        return text

    def _print(self) -> None:
        self.shown = True
        print(self.line(), file=self.stream, flush=True)

    def advance(self) -> None:
        self.items += 1
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._print()

    def close(self) -> None:
        if self.shown:
            self._print()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes}m{seconds:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def ordered_map(function: Callable[[T], R], items: Iterable[T], concurrency: int,
                counts: CallStats | None = None, progress: Progress | None = None) -> Iterator[R]:
    """`function(item)` for each item, at most `concurrency` at once, yielded in the items' order.

    `items` is read lazily, never more than 2 x `concurrency` ahead of what was yielded: a caller
    that decides from earlier results which items to send next (a generator that stops at COUNT
    questions) wastes at most that many calls. An error is raised when its item's turn
    comes, after the calls in flight finish (no thread is left running)."""
    counts = counts if counts is not None else CallStats()
    if concurrency <= 1:
        for item in items:
            yield _counted(function, item, counts)
            if progress:
                progress.advance()
        if progress:
            progress.close()
        return
    pending: deque[Future[R]] = deque()
    iterator = iter(items)
    # Twice as many items taken as calls in flight: a slow answer at the head (a 429 waiting out
    # its Retry-After) does not idle the other workers.
    window = 2 * concurrency
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="recall-kit-call") as pool:
        try:
            for item in iterator:
                pending.append(pool.submit(_counted, function, item, counts))
                if len(pending) >= window:
                    yield pending.popleft().result()
                    if progress:
                        progress.advance()
            while pending:
                yield pending.popleft().result()
                if progress:
                    progress.advance()
        finally:
            for future in pending:
                future.cancel()
            if progress:
                progress.close()


def _counted(function: Callable[[T], R], item: T, counts: CallStats) -> R:
    counts.add(in_flight=1)
    try:
        return function(item)
    finally:
        counts.add(in_flight=-1)


# -- llm's OpenAI-compatible models: one HTTP client per model for a run -------------------------


def reuse_clients(model: Any) -> Any:
    """`model` with one HTTP client per key (sync and async) for all its calls, where its plugin
    builds clients with `get_client(key, async_=)` (llm's OpenAI plugin, the path to every
    OpenAI-compatible server). That plugin builds a new client for every call: a TLS context and
    a connection pool, ~0.1 s of CPU each, which would bound calls in flight to a few. The clients
    are made with `max_retries=0`: recall-kit retries (Retry-After honoured) and counts each try."""
    get_client = getattr(model, "get_client", None)
    if not callable(get_client) or getattr(model, "_recall_kit_clients", None) is not None:
        return model
    clients: dict[tuple[Any, bool], Any] = {}
    lock = threading.Lock()

    def client(key: Any = None, *, async_: bool = False) -> Any:
        with lock:
            if (key, async_) not in clients:
                made = get_client(key, async_=async_)
                clients[key, async_] = made.with_options(max_retries=0) if hasattr(made, "with_options") else made
            return clients[key, async_]

    model.get_client = client
    model._recall_kit_clients = clients
    return model
