"""What the three adapters share: reading hits out of an answer by a simple path, and a retriever
base that retries a failed query, answers a batch with a bounded number of calls in flight, and
times the wait on the outside system apart from its own work."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import FailedSearch, Hit, OptionError, Retriever


class QueryFailed(Exception):
    """One query's call failed in a way worth retrying; the message (one line, no query or memory
    text, nothing the server sent) becomes the `FailedSearch` reason."""


def parse_json_object(text: str, what: str) -> dict[str, Any]:
    """An option holding a JSON object (`-o mcp.arguments='{"user": "a"}'`)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise OptionError(f"{what} is not valid JSON: {error.msg} at character {error.pos}.") from None
    if not isinstance(value, dict):
        raise OptionError(f"{what} must be a JSON object, got {type(value).__name__}.")
    return value


def follow(payload: Any, path: str) -> Any:
    """The value at a dotted path (`results`, `data.hits`, `` for the payload itself)."""
    value = payload
    for part in path.split(".") if path else []:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise QueryFailed(f"the answer has no {path!r}")
    return value


def read_hits(payload: Any, results: str, id_key: str, score_key: str) -> list[Hit]:
    """Hits from an answer: the list at `results`, each entry's id at `id_key` and score at
    `score_key` (an empty `score_key`, or entries without one: 1/rank, so the order is kept)."""
    entries = follow(payload, results)
    if not isinstance(entries, list):
        raise QueryFailed(f"{results or 'the answer'!r} is {type(entries).__name__}, not a list")
    hits = []
    for rank, entry in enumerate(entries, start=1):
        if isinstance(entry, (str, int)) and not isinstance(entry, bool):
            hits.append(Hit(str(entry), 1.0 / rank))
            continue
        doc = follow(entry, id_key)
        if not isinstance(doc, (str, int)) or isinstance(doc, bool):
            raise QueryFailed(f"hit {rank} has no string or integer {id_key!r}")
        score: Any = 1.0 / rank
        if score_key:
            try:
                score = follow(entry, score_key)
            except QueryFailed:
                score = 1.0 / rank
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise QueryFailed(f"hit {rank} has a score that is not a finite number")
        hits.append(Hit(str(doc), float(score)))
    return hits


@dataclass(frozen=True)
class AnswerOptions:
    """The options every adapter shares: where the hits are in an answer, and how long to wait."""

    #: Dotted path to the list of hits in the answer ("" for a bare list).
    results: str = "results"
    #: Key of a hit's id.
    id: str = "id"
    #: Key of a hit's score, higher is better (empty: the answer's order, scored 1/rank).
    score: str = "score"
    #: Seconds to wait for one answer.
    timeout: float = 30.0
    #: Calls per query before it is scored as an empty ranking and named in the warnings.
    tries: int = 3
    #: Calls in flight at once in the batch pass.
    concurrency: int = 4

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.tries < 1 or self.concurrency < 1:
            raise ValueError("timeout must be > 0, tries and concurrency at least 1")


class RemoteRetriever(Retriever):
    """A retriever whose searches are calls to an outside system.

    Subclasses implement `ask(query, k)`: one call, raising `QueryFailed` for a failure worth
    retrying and `PluginRunError` for one that ends the run (the system is gone). `search` retries
    `tries` times with a growing pause and then returns a `FailedSearch`; `search_many` keeps at
    most `concurrency` calls in flight. Subclasses call `waited(started)` around the call itself.
    """

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._local = threading.local()

    # -- what a subclass provides ----------------------------------------------------------------

    def ask(self, query: str, k: int) -> list[Hit]:  # pragma: no cover - abstract in effect
        raise NotImplementedError

    def tries(self) -> int:
        return int(getattr(self.options, "tries", 3))

    def concurrency(self) -> int:
        return int(getattr(self.options, "concurrency", 1))

    # -- timing --------------------------------------------------------------------------------

    def waited(self, started: float) -> None:
        """Record the time since `started` (time.perf_counter()) as this thread's wait."""
        self._local.wait_ms = getattr(self._local, "wait_ms", 0.0) + (time.perf_counter() - started) * 1000.0

    def last_wait_ms(self) -> float | None:
        return getattr(self._local, "last_wait_ms", None)

    # -- searching -----------------------------------------------------------------------------

    def search(self, query: str, k: int) -> list[Hit]:
        reason = ""
        tries = max(1, self.tries())
        self._local.wait_ms = 0.0
        for attempt in range(tries):
            if attempt:
                time.sleep(min(2.0, 0.05 * 2 ** attempt))
            try:
                hits = self.ask(query, k)
            except QueryFailed as failure:
                reason = str(failure)
                continue
            self._local.last_wait_ms = self._local.wait_ms
            return hits[:k]
        self._local.last_wait_ms = None
        return FailedSearch(f"{reason}; {tries} {'try' if tries == 1 else 'tries'}")

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        workers = max(1, self.concurrency())
        if workers == 1 or len(queries) < 2:
            return [self.search(query, k) for query in queries]
        ask: Callable[[str], list[Hit]] = lambda query: self.search(query, k)  # noqa: E731
        pool = ThreadPoolExecutor(max_workers=min(workers, len(queries)))
        try:
            return list(pool.map(ask, queries))
        finally:
            # Ctrl-C or SIGTERM must not wait out the calls in flight (a hung server's, up to the
            # timeout each): the caller's close() ends the connection, and with it those calls.
            pool.shutdown(wait=False, cancel_futures=True)
