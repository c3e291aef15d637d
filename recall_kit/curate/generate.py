"""Query generation: generator plugins (the `register_query_generators` hook), the built-in `exact`
generator (a salient phrase unique to one memory, no retriever in the loop), and writing the
generated strata into a dataset folder."""

from __future__ import annotations

import bisect
import json
import random
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.curate.text import STOPWORDS, idf_table, normalise, searchable_normalised, words
from recall_kit.dataset import CORPUS_FILE, QRELS_FILE, QUERIES_FILE, Dataset, read_dataset
from recall_kit.errors import DatasetError, OptionError, RecallKitError
from recall_kit.fileio import atomic_open, write_jsonl_atomic
from recall_kit.registry import generators
from recall_kit.types import Corpus, DocId, GeneratedQuery, Memory, QueryGenerator

#: Where the hook is documented; named in every "no generator" message.
HOOK_HELP = "implement the register_query_generators hook (see docs/evaluation-set.md)"


# -- the built-in exact generator ----------------------------------------------------------------

# Sentence and clause punctuation (followed by a space or the end), brackets, quotes, dashes
# between spaces and line breaks end a segment: no phrase crosses one.
_SEGMENT_BREAK = re.compile(r"[.!?;:,]+(?=\s|$)|[()\[\]{}\"\u201c\u201d\u2018\u2019`]|\s[-\u2013\u2014]+\s|\n")
_CLEAN_EDGE = re.compile(r"^\w.*\w$|^\w$", re.UNICODE | re.DOTALL)


@dataclass(frozen=True)
class PhraseCandidate:
    text: str
    score: float
    position: int


def phrase_candidates(content: str, idf: Mapping[str, float], min_words: int, max_words: int) -> list[PhraseCandidate]:
    """Phrases of `min_words` to `max_words` whitespace tokens within one segment of `content`,
    whose edge tokens start and end with a letter or digit and are not stopwords, best first.

    Score: the mean inverse document frequency of the phrase's non-stopword words.
    """
    found: dict[str, PhraseCandidate] = {}
    position = 0
    for segment in _SEGMENT_BREAK.split(content):
        tokens = segment.split()
        for start in range(len(tokens)):
            for length in range(min_words, max_words + 1):
                window = tokens[start : start + length]
                if len(window) < length:
                    break
                first, last = window[0], window[-1]
                if not _CLEAN_EDGE.match(first) or not _CLEAN_EDGE.match(last):
                    continue
                first_words, last_words = words(first), words(last)
                if not first_words or not last_words:
                    continue
                if first_words[0] in STOPWORDS or last_words[-1] in STOPWORDS:
                    continue
                content_tokens = [w for token in window for w in words(token) if w not in STOPWORDS]
                # Salient, not glue: at least two words, and half the tokens, carry content.
                if len(content_tokens) < max(2, (length + 1) // 2):
                    continue
                score = sum(idf.get(w, 0.0) for w in content_tokens) / len(content_tokens)
                text = " ".join(window)
                key = normalise(text)
                if key not in found:
                    found[key] = PhraseCandidate(text, score, position)
                position += 1
    # Best score first; then shorter, then earlier: deterministic.
    return sorted(found.values(), key=lambda c: (-c.score, len(c.text.split()), c.position))


class PhraseIndex:
    """Every memory's searchable fields, normalised, in one string: where does a phrase occur?"""

    def __init__(self, corpus: Corpus) -> None:
        parts = [searchable_normalised(memory) for memory in corpus]
        self._units = [memory.parent_id or memory.id for memory in corpus]
        self._ids = [memory.id for memory in corpus]
        self._position = {doc: i for i, doc in enumerate(self._ids)}
        self._starts: list[int] = []
        offset = 0
        for part in parts:
            self._starts.append(offset)
            offset += len(part) + 1
        self._haystack = "\x1e".join(parts)

    def memories_containing(self, phrase: str) -> list[DocId]:
        """Ids of the memories whose searchable text holds `phrase` (case- and space-insensitive)."""
        needle = normalise(phrase)
        if not needle:
            return []
        found: list[DocId] = []
        start = self._haystack.find(needle)
        while start != -1:
            index = bisect.bisect_right(self._starts, start) - 1
            if not found or found[-1] != self._ids[index]:
                found.append(self._ids[index])
            # Jump to the next memory: one hit per memory is enough.
            next_start = self._starts[index + 1] if index + 1 < len(self._starts) else len(self._haystack)
            start = self._haystack.find(needle, next_start)
        return found

    def units_containing(self, phrase: str) -> set[DocId]:
        """Like :meth:`memories_containing`, at the level rankings are scored (parent ids)."""
        return {self._units[self._position[doc]] for doc in self.memories_containing(phrase)}


class ExactPhraseGenerator(QueryGenerator):
    """Exact stratum: a salient 3-6 word phrase that occurs in exactly one memory, its relevant id.

    No retriever is in the loop, so no system is favoured. Memories are visited in a seeded random
    order; each gives its best-scoring phrase (mean IDF of its non-stopword words) that occurs
    (case-insensitive, whitespace-normalised, in any searchable field) in no other memory.
    Chunks are judged at their parent's level.
    """

    stratum = "exact"
    description = "salient phrase unique to one memory (no retriever in the loop)"

    @dataclass(frozen=True)
    class Options:
        min_words: int = 3
        max_words: int = 6
        #: Phrases tried per memory before moving on to the next memory.
        tries_per_memory: int = 25

        def __post_init__(self) -> None:
            if not 2 <= self.min_words <= self.max_words:
                raise ValueError("need 2 <= min_words <= max_words")

    def generate(self, corpus: Corpus, count: int, seed: int) -> list[GeneratedQuery]:
        options = self.options
        idf, _ = idf_table(
            {w for w in words(searchable) if w not in STOPWORDS}
            for searchable in (searchable_normalised(memory) for memory in corpus)
        )
        index = PhraseIndex(corpus)
        order = list(corpus)
        random.Random(seed).shuffle(order)
        queries: list[GeneratedQuery] = []
        used_units: set[DocId] = set()
        for memory in order:
            if len(queries) >= count:
                break
            unit = memory.parent_id or memory.id
            if unit in used_units:
                continue
            phrase = self._unique_phrase(memory, unit, idf, index, options)
            if phrase is None:
                continue
            used_units.add(unit)
            queries.append(
                GeneratedQuery(
                    text=phrase.text,
                    relevance={unit: 1},
                    scope=memory.scope,
                    provenance={"source_id": memory.id, "idf": round(phrase.score, 3)},
                    answer=phrase.text,  # the phrase is what the query asks for
                )
            )
        return queries

    @staticmethod
    def _unique_phrase(
        memory: Memory, unit: DocId, idf: Mapping[str, float], index: PhraseIndex, options: Any
    ) -> PhraseCandidate | None:
        candidates = phrase_candidates(memory.content, idf, options.min_words, options.max_words)
        for candidate in candidates[: options.tries_per_memory]:
            if index.units_containing(candidate.text) == {unit}:
                return candidate
        return None


# -- writing generated strata into a dataset folder ----------------------------------------------


@dataclass
class GenerationSummary:
    """What `generate_into` did, as counts per generator (never text)."""

    out: Path
    requested: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    dropped_duplicates: dict[str, int] = field(default_factory=dict)
    query_ids: dict[str, list[str]] = field(default_factory=dict)
    total_queries: int = 0

    def lines(self) -> list[str]:
        out = []
        for name, wanted in self.requested.items():
            got = self.written.get(name, 0)
            line = f"{name}: {got} of {wanted} queries written"
            if got < wanted:
                line += " (the generator gave no more: see its report above)"
            if self.dropped_duplicates.get(name):
                line += f"; {self.dropped_duplicates[name]} duplicates of existing queries dropped"
            out.append(line)
        out.append(f"{self.out}: {self.total_queries} queries in all")
        return out


def parse_generator_requests(
    exact: int | None = None,
    paraphrase: int | None = None,
    multihop: int | None = None,
    generator_specs: Sequence[str] = (),
) -> list[tuple[str, int]]:
    """Turn `--exact N`, `--paraphrase N`, `--multihop N` and `--generator NAME:COUNT` into
    (generator name, count) pairs. A stratum flag needs exactly one generator of that stratum."""
    requests: list[tuple[str, int]] = []
    registered = generators.all()
    for stratum, count in (("exact", exact), ("paraphrase", paraphrase), ("multihop", multihop)):
        if not count:
            continue
        if count < 0:
            raise OptionError(f"--{stratum} must be a positive count, got {count}.")
        names = [name for name, reg in registered.items() if reg.obj.stratum == stratum]
        if not names:
            raise OptionError(
                f"No query generator for stratum {stratum!r} is registered; {HOOK_HELP}, "
                f"or use --generator NAME:COUNT. Registered: {', '.join(registered) or 'none'}."
            )
        if len(names) > 1:
            raise OptionError(
                f"Several generators make stratum {stratum!r} ({', '.join(names)}): choose one with "
                "--generator NAME:COUNT."
            )
        requests.append((names[0], count))
    for spec in generator_specs:
        name, sep, raw_count = spec.rpartition(":")
        if not sep or not name:
            raise OptionError(f"Bad --generator {spec!r}: expected NAME:COUNT (e.g. exact:40).")
        try:
            count = int(raw_count)
        except ValueError:
            raise OptionError(f"Bad --generator {spec!r}: COUNT must be an integer.") from None
        if count < 1:
            raise OptionError(f"Bad --generator {spec!r}: COUNT must be at least 1.")
        generators.get(name)  # unknown names fail here, listing the registered ones
        requests.append((name, count))
    if not requests:
        raise OptionError("Nothing to generate: give --exact N or --generator NAME:COUNT.")
    return requests


def with_model_flags(
    requests: Sequence[tuple[str, int]],
    options: Mapping[str, Mapping[str, Any]] | None,
    model: str | None = None,
    allow_remote: bool = False,
    concurrency: int | None = None,
) -> dict[str, dict[str, Any]]:
    """`options` with `--model`, `--allow-remote` and `--concurrency` filled into the `model` /
    `allow_remote` / `concurrency` option of each requested generator; a generator without such an option refuses the flag
    (`--exact 40 --model X` would silently not use X)."""
    import dataclasses

    merged = {name: dict(values) for name, values in (options or {}).items()}
    for name, count in requests:
        declared = generators.get(name).obj.Options
        fields = {item.name for item in dataclasses.fields(declared)} if dataclasses.is_dataclass(declared) else set()
        for flag, key, value in (("--model", "model", model), ("--allow-remote", "allow_remote", allow_remote or None),
                                 ("--concurrency", "concurrency", concurrency)):
            if value is None:
                continue
            if key not in fields:
                raise OptionError(f"Generator {name!r} takes no {flag}: generate its stratum in a run of its own.")
            merged.setdefault(name, {})[key] = value
        model_field = next((item for item in dataclasses.fields(declared) if item.name == "model"), None) \
            if dataclasses.is_dataclass(declared) else None
        if model_field is not None and model_field.default == "" and not merged.get(name, {}).get("model"):
            stratum = getattr(generators.get(name).obj, "stratum", name)
            raise OptionError(f"--{stratum} {count}: its generator {name!r} writes queries with a language model, and "
                              f"none is named: pass --model NAME (an `llm` model name; 'llm models' lists them) or "
                              f"-o {name}.model=NAME.")
    return merged


def build_generator(name: str, raw_options: Mapping[str, Any] | None = None) -> QueryGenerator:
    """An instance of the generator registered as `name`, with options from strings."""
    generator = generators.create(name, raw_options)
    generator._registered_name = name  # type: ignore[attr-defined]
    return generator


def read_corpus_dataset(path: Path) -> tuple[Dataset, list[dict[str, Any]], list[dict[str, Any]]]:
    """Load a folder holding at least corpus.jsonl; queries.jsonl and qrels.jsonl may both be absent.

    Returns the dataset and the raw query and qrels rows (kept verbatim when appending).
    """
    has_queries = (path / QUERIES_FILE).exists()
    has_qrels = (path / QRELS_FILE).exists()
    if has_queries != has_qrels:
        missing = QRELS_FILE if has_queries else QUERIES_FILE
        raise DatasetError(f"{path}: has {QRELS_FILE if has_qrels else QUERIES_FILE} but no {missing}.")
    dataset, problems = read_dataset(path)
    if not has_queries:
        problems = [p for p in problems if not (p.file in (QUERIES_FILE, QRELS_FILE) and p.line == 0)]
    if problems:
        more = f" (and {len(problems) - 1} more; see 'recall-kit dataset validate')" if len(problems) > 1 else ""
        raise DatasetError(f"{problems[0]}{more}")
    assert dataset is not None
    if not len(dataset.corpus):
        raise DatasetError(f"{path / CORPUS_FILE}: holds no memories")
    raw_queries = _raw_rows(path / QUERIES_FILE) if has_queries else []
    raw_qrels = _raw_rows(path / QRELS_FILE) if has_qrels else []
    return dataset, raw_queries, raw_qrels


def _raw_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _raw_ids(path: Path) -> dict[str, Any]:
    """Each corpus id as written (an int stays an int in the qrels we write)."""
    ids: dict[str, Any] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                value = json.loads(line).get("id")
                ids[str(value)] = value
    return ids


def generate_into(
    source: str | Path,
    requests: Sequence[tuple[str, int]],
    seed: int = 0,
    out: str | Path | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> GenerationSummary:
    """Run each (generator, count) over `source`'s corpus and append the queries and qrels to the
    dataset in `out` (default: `source` itself), which gets a copy of corpus.jsonl.

    Existing queries and qrels are kept verbatim; new query ids never collide with existing ones;
    a generated query whose text (normalised) an existing query already has is dropped. The
    result is validated before any file is replaced, and each file is replaced atomically.
    """
    source_path = Path(source)
    out_path = Path(out) if out is not None else source_path
    dataset, raw_queries, raw_qrels = read_corpus_dataset(source_path)
    if out_path.resolve() != source_path.resolve() and any(
        (out_path / name).exists() for name in (QUERIES_FILE, QRELS_FILE)
    ):
        raise OptionError(f"{out_path} already holds queries or qrels; generate into it with DIR={out_path}.")
    raw_ids = _raw_ids(source_path / CORPUS_FILE)
    summary = GenerationSummary(out=out_path)
    taken_ids = {str(row.get("query_id")) for row in raw_queries}
    taken_texts = {normalise(str(row.get("text", ""))) for row in raw_queries}
    parents = {memory.parent_id for memory in dataset.corpus if memory.parent_id is not None}
    new_queries: list[dict[str, Any]] = []
    new_qrels: list[dict[str, Any]] = []
    for name, count in requests:
        generator = build_generator(name, (options or {}).get(name))
        kept, dropped = _new_queries(name, generator, dataset.corpus, count, seed, taken_texts, parents)
        summary.requested[name] = count
        summary.written[name] = len(kept)
        summary.dropped_duplicates[name] = dropped
        ids: list[str] = []
        number = 0
        for query in kept:
            number += 1
            while f"{name}_gen_{number:04d}" in taken_ids:
                number += 1
            query_id = f"{name}_gen_{number:04d}"
            taken_ids.add(query_id)
            taken_texts.add(normalise(query.text))
            ids.append(query_id)
            new_queries.append(_query_row(query_id, query, name, generator.stratum, seed))
            new_qrels.append(_qrels_row(query_id, query.relevance, raw_ids))
        summary.query_ids[name] = ids
    all_queries = raw_queries + new_queries
    all_qrels = raw_qrels + new_qrels
    if not all_queries:  # said as what happened, not as the empty file it would leave
        asked = ", ".join(f"{name} {count}" for name, count in requests)
        raise DatasetError(f"the query generators asked ({asked}) made no query from the {len(dataset.corpus)} "
                           "memories (a generated query needs a memory with a distinctive run of words to ask "
                           "about); give queries and labels of your own (queries.jsonl and qrels.jsonl).")
    summary.total_queries = len(all_queries)
    _write_checked(source_path, out_path, all_queries, all_qrels)
    return summary


def _new_queries(name: str, generator: QueryGenerator, corpus: Corpus, count: int, seed: int,
                 taken_texts: set[str], parents: set[DocId]) -> tuple[list[GeneratedQuery], int]:
    """Up to `count` queries from `generator` whose text (normalised) no existing query and no other
    kept one has, and how many were dropped as such duplicates; asked again, for more, when
    duplicates left it short (three tries)."""
    kept: list[GeneratedQuery] = []
    dropped = 0
    asked = count
    for _ in range(3):  # ask again, for more, when duplicates of existing queries were dropped
        produced = generator.generate(corpus, asked, seed)
        kept, dropped = [], 0
        for query in produced:
            key = normalise(query.text)
            if key in taken_texts or any(normalise(k.text) == key for k in kept):
                dropped += 1
                continue
            _check_ids(name, query, corpus, parents)
            kept.append(query)
            if len(kept) == count:
                break
        if len(kept) >= count or len(produced) < asked:
            break
        asked = asked + (count - len(kept)) * 2
    return kept, dropped


def _query_row(query_id: str, query: GeneratedQuery, name: str, stratum: str, seed: int) -> dict[str, Any]:
    """A generated query as queries.jsonl holds it: its provenance as `_`-prefixed fields."""
    row: dict[str, Any] = {"query_id": query_id, "text": query.text, "stratum": query.stratum or stratum}
    if query.scope is not None:
        row["scope"] = query.scope
    if query.answer:
        row["answer"] = query.answer
    row["_generator"] = name
    row["_seed"] = seed
    for key, value in query.provenance.items():
        row[key if key.startswith("_") else f"_{key}"] = value
    return row


def _check_ids(name: str, query: GeneratedQuery, corpus: Corpus, units: set[DocId]) -> None:
    for doc_id in query.relevance:
        if str(doc_id) not in corpus and str(doc_id) not in units:
            raise RecallKitError(f"Query generator {name!r} returned id {doc_id} that is not in the corpus.")


def _qrels_row(query_id: str, relevance: Mapping[DocId, int], raw_ids: Mapping[str, Any]) -> dict[str, Any]:
    if all(grade == 1 for grade in relevance.values()):
        return {"query_id": query_id, "relevant_ids": [raw_ids.get(str(d), str(d)) for d in relevance]}
    return {"query_id": query_id, "relevance": {str(d): int(g) for d, g in relevance.items()}}


def _write_checked(source: Path, out: Path, queries: list[dict[str, Any]], qrels: list[dict[str, Any]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # Validate the whole dataset as it will be, in a scratch folder, before touching `out`.
    with tempfile.TemporaryDirectory(prefix=".recall-kit-generate-", dir=out) as scratch:
        scratch_path = Path(scratch)
        shutil.copyfile(source / CORPUS_FILE, scratch_path / CORPUS_FILE)
        write_jsonl_atomic(scratch_path / QUERIES_FILE, queries)
        write_jsonl_atomic(scratch_path / QRELS_FILE, qrels)
        _, problems = read_dataset(scratch_path)
        if problems:
            raise DatasetError(f"the generated dataset does not validate: {problems[0]}")
    if out.resolve() != source.resolve():
        with atomic_open(out / CORPUS_FILE, "wb") as stream, (source / CORPUS_FILE).open("rb") as original:
            shutil.copyfileobj(original, stream)
    # qrels first: a query is never left without its judgments if the second write is interrupted.
    write_jsonl_atomic(out / QRELS_FILE, qrels)
    write_jsonl_atomic(out / QUERIES_FILE, queries)
