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
from pathlib import Path
from typing import Any, Literal

from recall_kit.plugin import FailedSearch, Hit, Memory, OptionError, PluginRunError, Retriever


class QueryFailed(Exception):
    """One query's call failed in a way worth retrying; the message (one line, no query or memory
    text, nothing the server sent) becomes the `FailedSearch` reason."""


class AnswerMisread(QueryFailed):
    """An answer came but could not be read as hits (no list where `results` points, a hit without
    an id, text where JSON was expected): the same call answers the same way again, so it is not
    retried, and a run whose first queries all fail so stops (`MISREAD_LIMIT`)."""


#: Queries in a row whose answers were all misread the same way before the run stops.
MISREAD_LIMIT = 3


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
    stays a number, a list a list); placeholders inside longer strings are substituted as text (a
    list joined by ", "), in one pass (a memory holding "{k}" is not filled again). Unknown placeholders are left as written."""
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
            if isinstance(value, (list, tuple)):  # "{tags}" inside a longer string: the tags joined
                return ", ".join(str(part) for part in value)
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
        raise AnswerMisread(f"{head or 'the answer'!r} is {type(items).__name__}, not a list")
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
            raise AnswerMisread(f"the answer has no {path!r}")
    return value


def as_hit_id(value: Any) -> str | None:
    """A hit's id as recall-kit writes ids: a string, or an integer (`7`); None for anything else
    (`7.0` too: a JSON number with a point is no integer id, and reading it as "7" would quietly
    name another memory than the server meant)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int):
        return str(value)
    return None


def compile_pattern(text: str, what: str) -> re.Pattern[str] | None:
    """An option holding a regular expression with exactly one group (`mcp.id_pattern`); None when
    empty. A bad expression, or one without its one group, is an OptionError naming the option."""
    if not text:
        return None
    try:
        pattern = re.compile(text)
    except re.error as error:
        raise OptionError(f"{what} is not a valid regular expression: {error}.") from None
    if pattern.groups != 1:
        raise OptionError(f"{what} must have exactly one group, the part to read, e.g. "
                          f"'id: ([0-9a-f]+)' (it has {pattern.groups}).")
    return pattern


@dataclass(frozen=True)
class TextReading:
    """How hits are read out of text: a regular expression each for the ids and the scores (one
    group each), applied to each hit's text, or to the whole answer when the answer is text."""

    id_pattern: re.Pattern[str] | None = None
    score_pattern: re.Pattern[str] | None = None
    #: The option prefix messages name (`mcp`, `http`, `command`).
    prefix: str = ""


def _from_text(text: str, reading: TextReading) -> list[Hit]:
    """Hits from an answer that is text: every match of the id pattern in order, scored by the
    score pattern's matches (as many as there are ids) or 1/rank."""
    if reading.id_pattern is None:
        raise AnswerMisread(f"the answer is text, not JSON: give {reading.prefix}.id_pattern (a regular expression "
                            "with one group) to read ids from it; 'recall-kit remote probe' shows candidates")
    ids = [match.group(1) for match in reading.id_pattern.finditer(text)]
    if reading.score_pattern is None:
        return [Hit(doc, 1.0 / rank) for rank, doc in enumerate(ids, start=1)]
    scores = [match.group(1) for match in reading.score_pattern.finditer(text)]
    if len(scores) != len(ids):
        raise AnswerMisread(f"{reading.prefix}.id_pattern found {len(ids)} ids but {reading.prefix}.score_pattern "
                            f"{len(scores)} scores in the answer")
    return [Hit(doc, _number(score, rank)) for rank, (doc, score) in enumerate(zip(ids, scores, strict=True), start=1)]


def _number(value: Any, rank: int) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise AnswerMisread(f"hit {rank} has a score that is not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AnswerMisread(f"hit {rank} has a score that is not a finite number")
    return float(value)


def _matched(pattern: re.Pattern[str] | None, value: Any, rank: int, what: str) -> Any:
    """`value` as the pattern reads it (its one group), or as it is when no pattern is given."""
    if pattern is None:
        return value
    found = pattern.search(value) if isinstance(value, str) else None
    if found is None:
        raise AnswerMisread(f"hit {rank}'s {what} text does not match the {what} pattern")
    return found.group(1)


#: A score key the hit does not hold.
_ABSENT = object()


def read_hits(payload: Any, results: str, id_key: str, score_key: str, reading: TextReading | None = None) -> list[Hit]:
    """Hits from an answer: the list at `results` (a path, `[]` allowed: `entities[].name` is the
    list of ids itself), each entry either an id or an object with its id at `id_key` and score at
    `score_key` (an empty `score_key`, or entries without one: 1/rank, so the order is kept: a
    rank-only answer). Ids may be strings or whole numbers. With `reading`'s patterns, an id (a
    score) is read out of the text there; an answer that is text (a string, or a string at
    `results`) is read by the patterns as a whole."""
    reading = reading or TextReading()
    if isinstance(payload, str):
        return _from_text(payload, reading)
    entries = select(payload, results)
    if isinstance(entries, str):
        return _from_text(entries, reading)
    if not isinstance(entries, list):
        raise AnswerMisread(f"{results or 'the answer'!r} is {type(entries).__name__}, not a list")
    hits = []
    for rank, entry in enumerate(entries, start=1):
        if not isinstance(entry, (dict, list)):
            bare = as_hit_id(_matched(reading.id_pattern, entry, rank, "id"))
            if bare is None:
                raise AnswerMisread(f"hit {rank} is not a string or integer id")
            hits.append(Hit(bare, 1.0 / rank))
            continue
        doc = as_hit_id(_matched(reading.id_pattern, select(entry, id_key), rank, "id"))
        if doc is None:
            raise AnswerMisread(f"hit {rank} has no string or integer {id_key!r}" + (
                " (a number with a point, such as 1.0, is no integer id)" if isinstance(select(entry, id_key), float)
                else ""))
        score: Any = 1.0 / rank
        if score_key:
            try:
                raw = follow(entry, score_key)
            except QueryFailed:  # no score: the rank's
                raw = _ABSENT
            if isinstance(raw, str) and reading.score_pattern is None:
                raise AnswerMisread(f"hit {rank}'s {score_key!r} is text, not a JSON number (a score sent as a "
                                    f"string is not read as one; {reading.prefix or 'the'}.score_pattern reads "
                                    "scores out of text)")
            if raw is not _ABSENT:
                try:
                    score = _matched(reading.score_pattern, raw, rank, "score")
                except QueryFailed:
                    score = 1.0 / rank
        hits.append(Hit(doc, _number(score, rank)))
    return hits


def _optional(payload: Any, path: str) -> Any:
    try:
        return select(payload, path)
    except QueryFailed:
        return None


def in_order(hits: list[Hit], order: str, prefix: str) -> list[Hit]:
    """Hits as recall-kit reads scores (higher is better, best first): an ascending answer's
    scores (lower is better, `score_order = "ascending"`) negated. Scores that run the other way
    than `order` says end the run at once, with the options that fix it named: the same server
    answers every query so, and no retry changes it."""
    from array import array

    scores = array("f", [hit.score for hit in hits]).tolist()  # as the host compares: float32 ties are ties
    ascending = order == "ascending"
    if scores == sorted(scores, reverse=not ascending):
        return [Hit(hit.id, -hit.score) for hit in hits] if ascending else hits
    if scores == sorted(scores, reverse=ascending):
        fix = (f"-o {prefix}.score_order=ascending (lower is better), or -o {prefix}.score= to read the ranks only"
               if not ascending else f"-o {prefix}.score_order=descending, or -o {prefix}.score= to read the ranks only")
        said = "ascend (lower first)" if not ascending else "descend (higher first)"
        raise PluginRunError(f"{prefix}: the hits' scores {said} in the server's answer, best first: add {fix}.")
    raise PluginRunError(f"{prefix}: the hits' scores are in no order in the server's answer (neither ascending nor "
                         f"descending): read the ranks only with -o {prefix}.score=")


#: The longest a remote call may be given (a day): past it a clock's deadline overflows (`inf`).
MAX_TIMEOUT = 86_400.0


@dataclass(frozen=True)
class AnswerOptions:
    """The options every adapter shares: where the hits are in an answer, and how long to wait."""

    #: Dotted path to the list of hits in the answer ("" for a bare list).
    results: str = "results"
    #: Key of a hit's id.
    id: str = "id"
    #: Key of a hit's score (empty: the answer's order, scored 1/rank).
    score: str = "score"
    #: A regular expression with one group reading the id out of each hit's text at `id`, or out of
    #: the whole answer when it is text (every match, in order), e.g. 'hash: ([0-9a-f]+)'.
    id_pattern: str = ""
    #: The same for scores: one group, a number (empty: 1/rank when the answer is text).
    score_pattern: str = ""
    #: "descending" (higher is better) or "ascending" (lower is better: distances, BM25 ranks).
    score_order: Literal["descending", "ascending"] = "descending"
    #: A file of ids the system uses that are sensitive (one a line, # comments): memories the
    #: server holds under its own ids, counted as sensitive hits whatever the dataset's ids are.
    sensitive_ids: str = ""
    #: Seconds to wait for one answer (at most MAX_TIMEOUT).
    timeout: float = 30.0
    #: Calls per query before it is scored as an empty ranking and named in the warnings.
    tries: int = 3
    #: Calls in flight at once in the batch pass.
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not 0 < self.timeout <= MAX_TIMEOUT or self.tries < 1 or self.concurrency < 1:  # nan: not in range
            raise ValueError(f"timeout must be > 0 and at most {MAX_TIMEOUT:g} s, tries and concurrency at least 1")
        self.text_reading("")
        if self.sensitive_ids and not Path(self.sensitive_ids).is_file():
            raise ValueError(f"sensitive_ids names {self.sensitive_ids!r}, which is not a file")

    def text_reading(self, prefix: str) -> TextReading:
        """The compiled id and score patterns (an OptionError for a bad one, naming it)."""
        named = f"{prefix}." if prefix else ""
        return TextReading(compile_pattern(self.id_pattern, f"{named}id_pattern"),
                           compile_pattern(self.score_pattern, f"{named}score_pattern"), prefix)

    def read_answer(self, payload: Any, prefix: str, reading: TextReading | None = None) -> list[Hit]:
        """The hits of one answer, best first, scores higher-is-better (an ascending answer's
        negated); scores in the wrong order end the run with the fix named (`in_order`)."""
        reading = reading or self.text_reading(prefix)
        hits = read_hits(payload, self.results, self.id, self.score, reading)
        text = isinstance(payload, str) or isinstance(_optional(payload, self.results), str)
        scored = reading.score_pattern is not None if text else bool(self.score)
        return in_order(hits, self.score_order, prefix) if scored else hits


@dataclass(frozen=True)
class FillOptions(AnswerOptions):
    """What the adapters that fill a server (one add call per memory) share: where the server's
    own id is in an add answer, whether an add may be sent twice, and where the id map goes."""

    #: Path to the server's own id in the add answer (empty: ids are the dataset's).
    add_result_id: str = ""
    #: A regular expression with one group reading the server's id out of the add answer's text
    #: (at add_result_id when given, else the whole answer), e.g. 'hash: ([0-9a-f]+)'.
    add_id_pattern: str = ""
    #: The add call may be sent again after a failure (the server ignores a memory it holds);
    #: false: one call per memory, as a retried store may hit the server's duplicate check.
    add_idempotent: bool = False
    #: Write the map from the server's ids to the dataset's here after the fill (JSON lines,
    #: {"server_id", "id"}), for `dataset import mcp|http --id-map`.
    id_map: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        compile_pattern(self.add_id_pattern, "add_id_pattern")


def check_url(url: str, what: str, required: bool = True) -> None:
    """A URL option: http:// or https://, with no space or control character in it (a space is a
    bad option here, not a server that cannot be reached later)."""
    if not url and not required:
        return
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{what} must be given as http://host:port/path or https://...")
    if any(char.isspace() or ord(char) < 32 for char in url):
        raise ValueError(f"{what} holds a space or a control character: write a space in a URL as %20")


#: The keys of a sensitive listing (`mcp.sensitive_listing`, `http.sensitive_listing`).
LISTING_KEYS = frozenset({"tool", "url", "arguments", "memories", "id", "flag"})
#: The paging keys a sensitive listing may hold, as `dataset import`'s options (`--paging` ...).
PAGING_KEYS = frozenset({"paging", "page_arg", "next_cursor", "page_size_arg", "page_size", "first_page"})


def listing_request(text: str, what: str, where: str) -> dict[str, Any]:
    """A sensitive listing's JSON object: where to list (`where`: "tool" or "url"), the path to
    the memories, to each one's id and to its sensitive flag; {} when not given."""
    listing = parse_json_object(text, what)
    if not listing:
        return {}
    unknown = sorted(set(listing) - LISTING_KEYS - PAGING_KEYS)
    if unknown:
        raise OptionError(f"{what} has the key {unknown[0]!r}; known: {where}, arguments, memories, id, flag, "
                          "and the paging keys " + ", ".join(sorted(PAGING_KEYS)) + ".")
    for key in (where, "id", "flag"):
        if not isinstance(listing.get(key), str) or not listing[key]:
            raise OptionError(f'{what} needs "{key}" (a string), e.g. {{"{where}": ..., "memories": "memories", '
                              '"id": "id", "flag": "metadata.sensitive"}.')
    if not isinstance(listing.get("memories", ""), str) or not isinstance(listing.get("arguments", {}), dict):
        raise OptionError(f'{what}: "memories" must be a path (a string) and "arguments" a JSON object.')
    return listing


def is_flagged(value: Any, where: str) -> bool:
    """A sensitive flag's value read as the host reads `is_sensitive` (true, 1, "yes", "on", ... in
    any case; absent or null: not sensitive). A flag that cannot be read ("maybe", [1]) is never
    taken as "not sensitive": it is refused, naming `where` (the memory's id)."""
    from recall_kit.plugin import sensitive_flag

    flag = sensitive_flag(value)
    if flag is None:
        shown = repr(value) if isinstance(value, (str, int, float)) and len(repr(value)) <= 14 else type(value).__name__
        raise AnswerMisread(f"{where}: its sensitive flag {shown} cannot be read as true or false; "
                            "fix the service's flag (or the path naming it)")
    return flag


def flagged_ids(payload: Any, listing: dict[str, Any]) -> set[str]:
    """The ids of the listing's entries whose flag is true (entries without one are not)."""
    entries = select(payload, str(listing.get("memories", "")))
    if not isinstance(entries, list):
        raise AnswerMisread(f"the listing's {listing.get('memories') or 'answer'!r} is {type(entries).__name__}, not a list")
    found = set()
    for entry in entries:
        try:
            doc, flag = as_hit_id(select(entry, listing["id"])), select(entry, listing["flag"])
        except QueryFailed:
            continue
        if doc is not None and is_flagged(flag, f"memory {doc!r}"):
            found.add(doc)
    return found


def read_sensitive_ids(path: str) -> set[str]:
    """The ids in a sensitive-ids file (one a line, `#` starts a comment)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise OptionError(f"sensitive_ids: cannot read {path} ({type(error).__name__}).") from None
    return {line.split("#", 1)[0].strip() for line in lines} - {""}


def server_id(answer: Any, path: str, pattern: re.Pattern[str] | None) -> str:
    """The server's own id in an add answer: at `path` (a one-element list, as `entities[].name`
    reads, is its element), read by `pattern` (one group) when given; an answer that is text is
    read by the pattern as a whole."""
    value = answer if isinstance(answer, str) and not path else select(answer, path) if path else answer
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if pattern is not None:
        found = pattern.search(value) if isinstance(value, str) else None
        if found is None:
            raise AnswerMisread("the add answer's text does not match the add id pattern")
        value = found.group(1)
    found_id = as_hit_id(value)
    if found_id is None:
        raise AnswerMisread("the add answer holds no string or integer id there")
    return found_id


#: Memories added before the first answer's score order is checked (a probe search).
PROBE_AFTER = 20


def probe_query(texts: Sequence[str]) -> str | None:
    """A one-word query most of `texts` share (the commonest word of four letters or more), so
    that a probe search after the first adds finds several of them; None when they share none."""
    from collections import Counter

    counts = Counter(word for text in texts for word in set(re.findall(r"[^\W\d_]{4,}", text.lower())))
    shared = [(count, word) for word, count in counts.items() if count > 1]
    return max(shared)[1] if shared else None


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
        # Queries in a row whose answers were misread the same way (`AnswerMisread`), and how.
        self._misreads: list[str] = []
        self._misread_lock = threading.Lock()
        #: The server's ids -> the dataset's, from the add answers.
        self._to_dataset: dict[str, str] = {}
        #: Ids the server's listing flags sensitive (`sensitive_listing`).
        self._flagged: set[str] = set()

    # -- ids -------------------------------------------------------------------------------------

    def mapped(self, hits: list[Hit]) -> list[Hit]:
        """Hits with the server's ids mapped back to the dataset's (ids it did not add kept)."""
        if not self._to_dataset:
            return hits
        return [Hit(self._to_dataset.get(hit.id, hit.id), hit.score) for hit in hits]

    def sensitive_ids(self) -> frozenset[str]:
        """Ids this system's hits may carry that are sensitive, as the hits carry them: the
        `sensitive_ids` file's and those its listing flags (`sensitive_listing`), mapped back."""
        found = set(self._flagged)
        path = getattr(self.options, "sensitive_ids", "")
        if path:
            found |= read_sensitive_ids(path)
        return frozenset(self._to_dataset.get(doc, doc) for doc in found)

    def fill(self, corpus: Sequence[Memory], add: Callable[[Memory], str | None]) -> None:
        """Add every memory (`add` answers the server's id, or None), checking the score order
        on a probe search after the first `PROBE_AFTER` (before the long fill, not after it);
        the id map written to `id_map` at the end."""
        self._to_dataset = {}
        first: list[str] = []
        for memory in corpus:
            found = add(memory)
            if found is not None:
                self._to_dataset[found] = memory.id
            if len(first) < PROBE_AFTER:
                first.append(memory.content)
                if len(first) == min(PROBE_AFTER, len(corpus)):
                    self._probe_order(first)
        path = getattr(self.options, "id_map", "")
        if path:
            with Path(path).open("w", encoding="utf-8") as handle:
                for server, doc in self._to_dataset.items():
                    handle.write(json.dumps({"server_id": server, "id": doc}) + "\n")

    def _probe_order(self, texts: list[str]) -> None:
        """One search for a word the first memories share: scores in the wrong order end the run
        now (`in_order`), before the rest of the fill; a failed probe says nothing."""
        query = probe_query(texts)
        if query is None:
            return
        try:
            self.ask(query, 10)
        except QueryFailed:
            return

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
            except AnswerMisread as misread:
                self._misread(str(misread))
                self._local.last_wait_ms = None
                return FailedSearch(f"{misread}; not retried")  # the same call answers the same way
            except QueryFailed as failure:
                reason = str(failure)
                continue
            with self._misread_lock:
                self._misreads.clear()
            self._local.last_wait_ms = self._local.wait_ms
            return hits[:k]
        self._local.last_wait_ms = None
        return FailedSearch(f"{reason}; {tries} {'try' if tries == 1 else 'tries'}")

    def _misread(self, reason: str) -> None:
        """Count a misread answer; `MISREAD_LIMIT` in a row, all alike, end the run: the options
        do not read this server's answers, and every other query would fail the same way."""
        with self._misread_lock:
            if self._misreads and self._misreads[-1] != reason:
                self._misreads.clear()
            self._misreads.append(reason)
            if len(self._misreads) < MISREAD_LIMIT:
                return
        raise PluginRunError(f"{self.option_prefix()}: {MISREAD_LIMIT} answers in a row could not be read, each the same way: "
                             f"{reason}. The options do not match what the server answers; "
                             f"'recall-kit remote probe' prints its answer's shape and the options that read it.")

    def option_prefix(self) -> str:
        """The adapter's name as options are given (`mcp`, `http`, `command`)."""
        return type(self).__name__.removesuffix("Retriever").lower()

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
