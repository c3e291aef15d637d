"""Extractors: what turns memories into concepts and typed relations (the `rules` and `triples`
built-ins, the base class, and the registry built from the `register_extractors` hook)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from recall_kit.plugin import Corpus, DatasetError, UnknownNameError, read_jsonl
from recall_kit_graph.normalise import STOPWORDS, normalise_concept, words


@dataclass(frozen=True, slots=True)
class Mention:
    """Memory `memory_id` mentions `concept` (raw text; the graph normalises it).

    `edge` is the edge type (`mentions` or `tagged`); `kind` says where the concept came from
    (`name`, `keyword`, `tag`, `identifier`, `relation`, `triple`).
    """

    memory_id: str
    concept: str
    edge: str = "mentions"
    kind: str = "name"


@dataclass(frozen=True, slots=True)
class Relation:
    """A typed relation `head --relation--> tail` between two concepts (raw text), stated by
    memory `memory_id` (None for a relation that no memory states)."""

    head: str
    relation: str
    tail: str
    memory_id: str | None = None


Fact = Mention | Relation


class Extractor(ABC):
    """Turns a corpus into facts. Subclasses are registered through `register_extractors` and
    receive the graph retriever's options (`recall_kit_graph.GraphRetriever.Options`)."""

    description: ClassVar[str] = ""

    def __init__(self, options: Any = None) -> None:
        self.options = options

    @abstractmethod
    def extract(self, corpus: Corpus) -> Iterable[Fact]:
        """Yield Mention and Relation facts for the memories of `corpus`."""

    def cache_key(self) -> str:
        """Anything besides the corpus that changes this extractor's output (for the on-disk
        index key): a version, a file's digest."""
        return type(self).__name__


class UnknownExtractorError(UnknownNameError):
    kind = "extractor"


def _check_extractor(name: str, obj: Any) -> str | None:
    if isinstance(obj, type) and issubclass(obj, Extractor):
        return None
    return f"expected a subclass of recall_kit_graph.Extractor, got {obj!r}"


def extractor_registry() -> Any:
    """The registry of extractors (built on first use, once the hook spec exists)."""
    global _REGISTRY
    if _REGISTRY is None:
        from recall_kit.plugin import Registry

        _REGISTRY = Registry(
            "extractor", "register_extractors", _check_extractor, UnknownExtractorError
        )
    return _REGISTRY


_REGISTRY: Any = None


# --- rules --------------------------------------------------------------------------------------

#: (relation type, verb phrase pattern). Head is the phrase before the verb, tail the one after.
RELATION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("part_of", r"(?:is|are|was|were) (?:a )?part of"),
    ("located_in", r"(?:is|are) (?:located|based) in|lives? in|works? (?:in|from)(?= [A-Z])"),
    ("works_at", r"works? (?:at|for)|(?:is|are) employed (?:at|by)"),
    ("works_on", r"works? on|leads|(?:is|are) (?:the )?(?:tech |team )?lead of|contributes? to|owns|maintains"),
    ("depends_on", r"depends? on|relies on|rely on"),
    ("uses", r"uses|use|used"),
    ("decided", r"decided(?: on| to)?|chose"),
    ("related_to", r"(?:is|are) related to|relates? to"),
    ("is_a", r"(?:is|are) (?:a|an)"),
)
_RELATION_REGEX = re.compile(
    "|".join(f"(?P<{name}>\\b(?:{pattern})\\b)" for name, pattern in RELATION_PATTERNS)
)
_CLAUSE_SPLIT = re.compile(r"[.;:!?,()\n]+(?:\s|$)|\s[-–—]\s")
# Words that end a relation's tail phrase ("Terraform for infrastructure" -> "Terraform").
_TAIL_BREAK = STOPWORDS | {"because", "since", "while", "using", "via", "which", "who"}
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|\s[-–—]\s)$")


def _capitalised(word: str) -> bool:
    return word[:1].isupper()


def _is_identifier(word: str) -> bool:
    """A lowercase name with inner punctuation: kestrel-tap, os-docs, events.v3."""
    return bool(re.search(r"[a-z]", word)) and bool(re.search(r"\w[-._]\w", word))


class RulesExtractor(Extractor):
    """Rule-based, no model, no network: tags, expanded keywords, capitalised and multi-word
    names, identifiers such as kestrel-tap, and lexical relation patterns ("X uses Y")."""

    description = "Tags, keywords, capitalised names and 'X uses Y'-style patterns; no model."
    VERSION = "rules-1"

    def cache_key(self) -> str:
        return self.VERSION

    def extract(self, corpus: Corpus) -> Iterator[Fact]:
        # A capitalised word that opens a sentence is a name unless the corpus also writes it in
        # lowercase and never capitalises it mid-sentence ("Meetings default to ..." is not a
        # name; "Odile Fenwick leads ..." and "Kestrel stores ..." are).
        mid_sentence: set[str] = set()
        lowercase: set[str] = set()
        for memory in corpus:
            for match in words(memory.content):
                word = match.group()
                if not _capitalised(word):
                    lowercase.add(word)
                elif not _SENTENCE_START.search(memory.content[: match.start()]):
                    mid_sentence.add(word)
        common = {word for word in lowercase if word[:1].upper() + word[1:] not in mid_sentence}
        not_names = {word[:1].upper() + word[1:] for word in common}
        for memory in corpus:
            yield from self.extract_memory(memory.id, memory.content, memory.tags,
                                           memory.expanded_keywords, not_names)

    def extract_memory(
        self,
        memory_id: str,
        content: str,
        tags: Iterable[str] = (),
        keywords: str = "",
        not_names_at_sentence_start: frozenset[str] | set[str] = frozenset(),
    ) -> Iterator[Fact]:
        for tag in tags:
            yield Mention(memory_id, tag, "tagged", "tag")
        for keyword in re.split(r"[\s,;]+", keywords):
            if keyword:
                yield Mention(memory_id, keyword, "mentions", "keyword")
        yield from self._names(memory_id, content, not_names_at_sentence_start)
        yield from self._relations(memory_id, content)

    def _names(self, memory_id: str, content: str, not_names: frozenset[str] | set[str]) -> Iterator[Fact]:
        run: list[str] = []
        previous_end = -1

        def flush() -> Iterator[Fact]:
            if run:
                yield Mention(memory_id, " ".join(run), "mentions", "name")
                if len(run) > 1:  # "Odile Fenwick" is also found as "Odile"
                    for part in run:
                        yield Mention(memory_id, part, "mentions", "name")
            run.clear()

        for match in words(content):
            word = match.group()
            if _is_identifier(word) and not _capitalised(word):
                yield Mention(memory_id, word, "mentions", "identifier")
            joined = previous_end >= 0 and content[previous_end : match.start()].strip() == ""
            if not joined:
                yield from flush()
            previous_end = match.end()
            if not _capitalised(word):
                yield from flush()
                continue
            at_start = bool(_SENTENCE_START.search(content[: match.start()]))
            if at_start and not run and word in not_names:
                continue
            run.append(word)
        yield from flush()

    def _relations(self, memory_id: str, content: str) -> Iterator[Fact]:
        for clause in _CLAUSE_SPLIT.split(content):
            for match in _RELATION_REGEX.finditer(clause):
                relation = match.lastgroup
                head = _head_phrase(clause[: match.start()])
                tail = _tail_phrase(clause[match.end() :])
                if relation and head and tail:
                    yield Mention(memory_id, head, "mentions", "relation")
                    yield Mention(memory_id, tail, "mentions", "relation")
                    yield Relation(head, relation, tail, memory_id)


def _head_phrase(text: str) -> str:
    """The subject before a verb: its trailing capitalised run, else its last 1-3 words."""
    tokens = [match.group() for match in words(text)]
    if not tokens:
        return ""
    run: list[str] = []
    for word in reversed(tokens):
        if not _capitalised(word):
            break
        run.insert(0, word)
    if run:
        return " ".join(run[-4:])
    tail: list[str] = []
    for word in reversed(tokens[-3:]):
        if word.casefold() in _TAIL_BREAK:
            break
        tail.insert(0, word)
    return " ".join(tail)


def _tail_phrase(text: str) -> str:
    """The object after a verb: a leading capitalised run, else up to 3 words to a break word."""
    tokens = [match.group() for match in words(text)]
    while tokens and tokens[0].casefold() in STOPWORDS:
        tokens.pop(0)
    if not tokens:
        return ""
    if _capitalised(tokens[0]):
        run = []
        for word in tokens:
            if not _capitalised(word):
                break
            run.append(word)
        return " ".join(run[:4])
    phrase = []
    for word in tokens[:3]:
        if word.casefold() in _TAIL_BREAK:
            break
        phrase.append(word)
    return " ".join(phrase)


# --- triples ------------------------------------------------------------------------------------


class TriplesExtractor(Extractor):
    """Relation triples from a JSONL file (option `triples=PATH`), one per line:
    {"memory_id": 40, "head": "Odile Fenwick", "relation": "works_on", "tail": "Kestrel"}.

    For triples produced offline (by a language model or by hand). `memory_id` may be null for
    a relation no single memory states; triples of memories outside the corpus are skipped
    (the runner indexes one scope at a time).
    """

    description = "Relation triples from a JSONL file (option triples=PATH)."

    def _path(self) -> Path:
        path = getattr(self.options, "triples", None)
        if not path:
            raise DatasetError("The 'triples' extractor needs the option triples=PATH.")
        return Path(path)

    def cache_key(self) -> str:
        import hashlib

        path = self._path()
        try:
            return "triples-1:" + hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as error:
            raise DatasetError(f"{path}: cannot read triples ({error.strerror}).") from None

    def extract(self, corpus: Corpus) -> Iterator[Fact]:
        for _number, triple in read_triples(self._path()):
            memory_id = triple["memory_id"]
            if memory_id is not None and memory_id not in corpus:
                continue
            if memory_id is not None:
                yield Mention(memory_id, triple["head"], "mentions", "triple")
                yield Mention(memory_id, triple["tail"], "mentions", "triple")
            yield Relation(triple["head"], triple["relation"], triple["tail"], memory_id)


def normalise_relation(text: str) -> str:
    """A relation type as an identifier: "Works On" -> "works_on"."""
    return re.sub(r"[^0-9a-z]+", "_", text.casefold()).strip("_")


def read_triples(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Parse and check a triples file; a malformed line raises DatasetError `file:line: what`."""
    name = path.name
    for number, row in read_jsonl(path):
        for key in ("memory_id", "head", "relation", "tail"):
            if key not in row:
                raise DatasetError(f'{name}:{number}: missing "{key}"')
        memory_id = row["memory_id"]
        if isinstance(memory_id, bool) or not (
            memory_id is None or isinstance(memory_id, (str, int))
        ):
            raise DatasetError(f'{name}:{number}: "memory_id" must be a string, an integer or null')
        triple: dict[str, Any] = {"memory_id": None if memory_id is None else str(memory_id)}
        for key in ("head", "relation", "tail"):
            value = row[key]
            if not isinstance(value, str):
                raise DatasetError(f'{name}:{number}: "{key}" must be a string')
            cleaned = normalise_relation(value) if key == "relation" else value
            if key != "relation":
                cleaned = value if normalise_concept(value) else ""
            if not cleaned:
                raise DatasetError(f'{name}:{number}: "{key}" is empty after normalisation')
            triple[key] = cleaned
        yield number, triple
