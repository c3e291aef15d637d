"""What the three adapters share: reading hits out of an answer by a simple path, and a retriever
base that retries a failed query, answers a batch with a bounded number of calls in flight, and
times the wait on the outside system apart from its own work."""

from __future__ import annotations

import json
import math
import re
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import FailedSearch, Hit, Memory, OptionError, Retriever


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


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def fill_template(template: Any, values: dict[str, Any]) -> Any:
    """A JSON template (an add call's or a search call's arguments, a POST body) filled in: a
    string that is exactly one placeholder (`"{k}"`, `"{tags}"`) becomes the value itself (a number
    stays a number, a list a list); placeholders inside longer strings are substituted as text, in
    one pass (a memory holding "{k}" is not filled again). Unknown placeholders are left as written."""
    if isinstance(template, dict):
        return {key: fill_template(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill_template(value, values) for value in template]
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]

        def text(match: re.Match[str]) -> str:
            if match.group(1) not in values:
                return match.group(0)
            value = values[match.group(1)]
            return "" if value is None else str(value)

        return _PLACEHOLDER.sub(text, template)
    return template


def parse_template(text: str, what: str, allowed: frozenset[str]) -> dict[str, Any]:
    """An option holding a JSON template: a JSON object whose placeholders are all in `allowed`."""
    template = parse_json_object(text, what)
    unknown = sorted(set(_PLACEHOLDER.findall(json.dumps(template))) - allowed)
    if unknown:
        raise OptionError(f"{what} has the placeholder {{{unknown[0]}}}; known: "
                          + ", ".join(f"{{{name}}}" for name in sorted(allowed)) + ".")
    return template


#: The placeholders of a search call's template, and of an add call's (one memory).
SEARCH_FIELDS = frozenset({"text", "k", "scope"})
MEMORY_FIELDS = frozenset({"id", "content", "scope", "category", "tags", "expanded_keywords", "importance",
                           "created_at"})


def memory_values(memory: Memory) -> dict[str, Any]:
    """A memory's fields for an add call's template (`{tags}` alone is the list)."""
    return {"id": memory.id, "content": memory.content, "scope": memory.scope, "category": memory.category,
            "tags": list(memory.tags), "expanded_keywords": memory.expanded_keywords,
            "importance": memory.importance, "created_at": memory.created_at}


def select(payload: Any, path: str) -> Any:
    """The value at a path: dotted keys (`data.hits`), list indexes (`results.0`), and `[]` after
    a key for each element of the list there (`entities[].name`: every entity's name, a list).
    An empty path is the payload itself."""
    if "[]" not in path:
        return follow(payload, path)
    head, _, rest = path.partition("[]")
    items = follow(payload, head)
    if not isinstance(items, list):
        raise QueryFailed(f"{head or 'the answer'!r} is {type(items).__name__}, not a list")
    rest = rest.removeprefix(".")
    return [select(item, rest) for item in items]


def split_command_line(text: str, what: str) -> list[str]:
    """`text` split as a shell would (`shlex.split`); an unbalanced quote or a trailing backslash
    is a ValueError naming the option `what` (`command.argv`)."""
    try:
        return shlex.split(text)
    except ValueError as error:
        raise ValueError(f"{what} cannot be split as a shell would ({str(error).lower()}): close the quote "
                         "or escape it") from None


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


def as_hit_id(value: Any) -> str | None:
    """A hit's id as recall-kit writes ids: a string, or a number that is a whole number (`7`,
    `7.0`); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return None


def read_hits(payload: Any, results: str, id_key: str, score_key: str) -> list[Hit]:
    """Hits from an answer: the list at `results` (a path, `[]` allowed: `entities[].name` is the
    list of ids itself), each entry either an id or an object with its id at `id_key` and score at
    `score_key` (an empty `score_key`, or entries without one: 1/rank, so the order is kept: a
    rank-only answer). Ids may be strings or whole numbers."""
    entries = select(payload, results)
    if not isinstance(entries, list):
        raise QueryFailed(f"{results or 'the answer'!r} is {type(entries).__name__}, not a list")
    hits = []
    for rank, entry in enumerate(entries, start=1):
        if not isinstance(entry, (dict, list)):
            bare = as_hit_id(entry)
            if bare is None:
                raise QueryFailed(f"hit {rank} is not a string or integer id")
            hits.append(Hit(bare, 1.0 / rank))
            continue
        doc = as_hit_id(select(entry, id_key))
        if doc is None:
            raise QueryFailed(f"hit {rank} has no string or integer {id_key!r}")
        score: Any = 1.0 / rank
        if score_key:
            try:
                score = follow(entry, score_key)
            except QueryFailed:
                score = 1.0 / rank
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise QueryFailed(f"hit {rank} has a score that is not a finite number")
        hits.append(Hit(doc, float(score)))
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

    # A live store holds what it holds: memories the snapshot lacks are counted, not refused.
    searches_own_store = True

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._local = threading.local()

    # -- what a subclass provides ----------------------------------------------------------------

    def ask(self, query: str, k: int) -> list[Hit]:  # pragma: no cover - abstract in effect
        raise NotImplementedError

    def empty_hint(self) -> str | None:
        """What to check when every query of a run came back empty (None: nothing to add); the run
        adds it to its warning. A scoped dataset searched without telling the server the scope is
        the usual cause."""
        return None

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
