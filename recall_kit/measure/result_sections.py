"""The result document's sections, typed: each a small frozen dataclass that parses (validates)
its mapping and writes it back (schema recall-kit/result/1; the document itself: result.py)."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from recall_kit.dataset import summarise
from recall_kit.document_reader import DocumentReader
from recall_kit.errors import UnknownNameError
from recall_kit.measure.systems.context import describe as describe_context
from recall_kit.options import options_to_dict

if TYPE_CHECKING:
    from recall_kit.dataset import Dataset
    from recall_kit.measure.systems.system import System

SCHEMA = "recall-kit/result/1"
#: How a privacy finding among a result's warnings begins (a live leg returned sensitive memories).
PRIVACY_PREFIX = "PRIVACY:"


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def build_manifest(system: System, seed: int) -> Manifest:
    """Versions, platform and time: what is needed to reproduce (or distrust) a result."""
    return Manifest(
        recall_kit=_version("recall-kit"),
        plugins={leg.plugin: _version(leg.plugin) for leg in system.legs},
        context={leg.name: options_to_dict(leg.context) for leg in system.legs if leg.context},
        python=platform.python_version(),
        platform=platform.platform(),
        cpu_count=os.cpu_count(),
        seed=seed,
        time=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )


# -- the sections, typed --------------------------------------------------------------------------
# Each section is a small frozen dataclass: `parse` validates the document's mapping (a bad value is
# one line naming the file and the field), `to_dict` writes it back as it was read. Keys this
# version does not know are kept in `extra` and written back, so a newer file survives a round trip.
# A section read from an absent or empty mapping is written back empty.

LATENCY_STATS = ("n", "p50", "p95", "p99", "mean", "max")


def _is_empty(section: Any) -> bool:
    return bool(section == type(section)())


def _unknown(data: dict[str, Any], known: Sequence[str]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in known}


class _Section:
    """What every section shares: `from_dict` for a mapping alone, and `to_dict` writing `_KEYS`
    in order (a tuple of parts as a list of their dicts), then the keys kept in `extra`."""

    _KEYS: ClassVar[tuple[str, ...]] = ()
    #: The section's key in the document, for the messages of `from_dict`.
    _FIELD: ClassVar[str] = ""
    extra: dict[str, Any]

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> Self:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Any, source: str = "result") -> Self:
        return cls.parse(DocumentReader(source, SCHEMA), data, cls._FIELD)

    def to_dict(self) -> dict[str, Any]:
        if _is_empty(self):
            return {}
        written = {key: getattr(self, key) for key in self._KEYS}
        return {**{key: [part.to_dict() for part in value] if isinstance(value, tuple) else value
                   for key, value in written.items()}, **self.extra}


@dataclass(frozen=True)
class LegInfo:
    """One leg of the system: its registered name, the distribution that provides it, its weight
    and full options; `context` when the host expanded its memories with their neighbours."""

    name: str
    plugin: str | None = None
    weight: float = 1.0
    options: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("name", "plugin", "weight", "options", "context")

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> LegInfo:
        data = read.object(data, where)
        return cls(name=read.string(data, "name", f"{where}.name"),
                   plugin=read.optional_string(data, "plugin", f"{where}.plugin"),
                   weight=read.number(data, "weight", f"{where}.weight") if "weight" in data else 1.0,
                   options=read.optional_mapping(data, "options", f"{where}.options") or {},
                   context=read.optional_mapping(data, "context", f"{where}.context"),
                   extra=_unknown(data, cls._KEYS))

    def to_dict(self) -> dict[str, Any]:
        entry = {"name": self.name, "plugin": self.plugin, "weight": self.weight, "options": self.options}
        if self.context is not None:
            entry["context"] = self.context
        return {**entry, **self.extra}


@dataclass(frozen=True)
class FusionStep:
    """One step of the fusion chain: its name and options."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> FusionStep:
        data = read.object(data, where)
        return cls(name=read.string(data, "name", f"{where}.name"),
                   options=read.optional_mapping(data, "options", f"{where}.options") or {},
                   extra=_unknown(data, ("name", "options")))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "options": self.options, **self.extra}


@dataclass(frozen=True)
class SystemInfo(_Section):
    """The system section: the spec (`fts5+dense`), its label (spec plus fusion chain), the legs,
    the fusion chain and the legs' weights."""

    _FIELD = "system"

    spec: str | None = None
    label: str | None = None
    legs: tuple[LegInfo, ...] = ()
    fusion: tuple[FusionStep, ...] = ()
    weights: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("spec", "label", "legs", "fusion", "weights")

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str = "system") -> SystemInfo:
        data = read.object(data, where)
        weights = read.optional_mapping(data, "weights", f"{where}.weights") or {}
        return cls(spec=read.optional_string(data, "spec", f"{where}.spec"),
                   label=read.optional_string(data, "label", f"{where}.label"),
                   legs=tuple(LegInfo.parse(read, leg, f"{where}.legs[{i}]")
                              for i, leg in enumerate(read.optional_sequence(data, "legs", f"{where}.legs"))),
                   fusion=tuple(FusionStep.parse(read, step, f"{where}.fusion[{i}]")
                                for i, step in enumerate(read.optional_sequence(data, "fusion", f"{where}.fusion"))),
                   weights={str(leg): read.number(weights, leg, f"{where}.weights.{leg}") for leg in weights},
                   extra=_unknown(data, cls._KEYS))

    @classmethod
    def of(cls, system: System) -> SystemInfo:
        """The section of a built system: its spec, label, legs (each leg's plugin, weight, options
        and context options), fusion chain and weights."""
        return cls(spec=system.spec.retriever, label=system.label,
                   legs=tuple(LegInfo(name=leg.name, plugin=leg.plugin, weight=float(leg.weight),
                                      options=options_to_dict(leg.options) or {},
                                      context=describe_context(leg.context) if leg.context else None)
                              for leg in system.legs),
                   fusion=tuple(FusionStep(name=name, options=options_to_dict(fusion.options) or {})
                                for name, fusion in zip(system.fusion_names, system.fusions, strict=True)),
                   weights={name: float(weight) for name, weight in system.weights.items()})

    def option_entries(self) -> list[tuple[str, str, str]]:
        """Every option as (part, key, value text): each leg's options and context expansion
        (``context.window``), then each fusion's; what `settings` lists, one entry each."""
        entries = []
        for leg in self.legs:
            entries += [(leg.name, str(key), str(value)) for key, value in leg.options.items()]
            entries += [(leg.name, f"context.{key}", str(value)) for key, value in (leg.context or {}).items()]
        for step in self.fusion:
            entries += [(f"fusion {step.name}", str(key), str(value)) for key, value in step.options.items()]
        return entries

    def settings(self, hidden: Collection[tuple[str, str, str]] = ()) -> str:
        """The system as one line: each leg's weight and options, then each fusion's options,
        leaving out the `hidden` entries (those every compared system shares, shown apart)."""
        shown: dict[str, list[str]] = {}
        for part, key, value in self.option_entries():
            if (part, key, value) not in hidden:
                shown.setdefault(part, []).append(f"{key}={value}")
        parts = []
        for leg in self.legs:
            settings = ", ".join(shown.get(leg.name, []))
            parts.append(f"{leg.name} (weight {leg.weight}{'; ' + settings if settings else ''})")
        for step in self.fusion:
            settings = ", ".join(shown.get(f"fusion {step.name}", []))
            parts.append(f"fusion {step.name}{' (' + settings + ')' if settings else ''}")
        return "; ".join(parts) or "?"


@dataclass(frozen=True)
class DatasetInfo(_Section):
    """The dataset section: name, path, fingerprints, counts and queries per stratum."""

    _FIELD = "dataset"

    name: str | None = None
    path: str | None = None
    fingerprint: str | None = None
    corpus_fingerprint: str | None = None
    memories: int | None = None
    queries: int | None = None
    strata: dict[str, int] = field(default_factory=dict)
    dropped_sensitive: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("name", "path", "fingerprint", "corpus_fingerprint", "memories", "queries", "strata",
             "dropped_sensitive")

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str = "dataset") -> DatasetInfo:
        data = read.object(data, where)
        strata = read.optional_mapping(data, "strata", f"{where}.strata") or {}
        return cls(name=read.optional_string(data, "name", f"{where}.name"),
                   path=read.optional_string(data, "path", f"{where}.path"),
                   fingerprint=read.optional_string(data, "fingerprint", f"{where}.fingerprint"),
                   corpus_fingerprint=read.optional_string(data, "corpus_fingerprint", f"{where}.corpus_fingerprint"),
                   memories=read.optional_count(data, "memories", f"{where}.memories"),
                   queries=read.optional_count(data, "queries", f"{where}.queries"),
                   strata={str(s): int(read.count(strata, s, f"{where}.strata.{s}")) for s in strata},
                   dropped_sensitive=read.optional_count(data, "dropped_sensitive", f"{where}.dropped_sensitive"),
                   extra=_unknown(data, cls._KEYS))

    @classmethod
    def of(cls, dataset: Dataset) -> DatasetInfo:
        """The section of a loaded dataset: its name, path, fingerprints, counts and queries per stratum."""
        strata: dict[str, int] = {}
        for query in dataset.queries:
            strata[query.stratum] = strata.get(query.stratum, 0) + 1
        return cls(name=dataset.name, path=str(dataset.path), fingerprint=dataset.fingerprint,
                   corpus_fingerprint=dataset.corpus.fingerprint, memories=len(dataset.corpus),
                   queries=len(dataset.queries), strata=dict(sorted(strata.items())),
                   dropped_sensitive=dataset.dropped_sensitive)

    @property
    def display_name(self) -> str:
        """The dataset's name, else its folder's name."""
        return self.name or Path(self.path or "?").name


@dataclass(frozen=True)
class LatencyStats:
    """Single-query latency in ms over the timed queries: n, p50, p95, p99, mean, max (None where
    the file does not hold it)."""

    n: int = 0
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    max: float | None = None

    @property
    def measured(self) -> bool:
        """Whether any query was timed (not with --latency-sample 0)."""
        return self.n > 0

    def stat(self, name: str) -> float:
        """The statistic `name` (p50, p95, p99, mean, max); 0.0 where the file does not hold it."""
        if name not in LATENCY_STATS[1:]:
            raise UnknownNameError(name, list(LATENCY_STATS[1:]),
                                   f"Unknown latency statistic {name!r}. Available: {', '.join(LATENCY_STATS[1:])}.")
        value = getattr(self, name)
        return 0.0 if value is None else float(value)

    @staticmethod
    def _parse_stats(read: DocumentReader, data: dict[str, Any], where: str) -> dict[str, Any]:
        stats: dict[str, Any] = {}
        for stat in LATENCY_STATS:  # a NaN or negative latency passed `gate`
            if data.get(stat) is not None:
                value = read.non_negative(read.number(data, stat, f"{where}.{stat}"), f"{where}.{stat}")
                stats[stat] = int(value) if stat == "n" else value
        return stats

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> LatencyStats:
        return cls(**cls._parse_stats(read, read.object(data, where), where))

    @classmethod
    def of(cls, values_ms: Sequence[float], **parts: Any) -> Self:
        """The statistics of single-query latencies `values_ms` (each rounded to 4 decimals; all 0
        when nothing was timed), with the section's other `parts`."""
        stats: dict[str, Any] = {stat: int(value) if stat == "n" else float(value)
                                 for stat, value in summarise(values_ms, LATENCY_STATS).items()}
        return cls(**stats, **parts)

    def _stats_dict(self) -> dict[str, Any]:
        return {stat: getattr(self, stat) for stat in LATENCY_STATS if getattr(self, stat) is not None}

    def to_dict(self) -> dict[str, Any]:
        return self._stats_dict()


@dataclass(frozen=True)
class LegLatency(LatencyStats):
    """A leg's latency; for a leg that waits on an outside system, also the wait (the server's
    answer, as the client sees it) and the overhead (the rest), over the same queries.
    `first_query_ms` is the untimed first call before them (a model loaded or a session started
    on first use: the leg's cold start, not counted in the statistics)."""

    wait: LatencyStats | None = None
    overhead: LatencyStats | None = None
    first_query_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> LegLatency:
        data = read.object(data, where)
        parts: dict[str, Any] = {part: LatencyStats.parse(read, data[part], f"{where}.{part}")
                                 for part in ("wait", "overhead") if data.get(part) is not None}
        if data.get("first_query_ms") is not None:
            parts["first_query_ms"] = read.non_negative(
                read.number(data, "first_query_ms", f"{where}.first_query_ms"), f"{where}.first_query_ms")
        return cls(**cls._parse_stats(read, data, where), **parts,
                   extra=_unknown(data, (*LATENCY_STATS, "wait", "overhead", "first_query_ms")))

    def to_dict(self) -> dict[str, Any]:
        entry = self._stats_dict()
        for part in ("wait", "overhead"):
            stats = getattr(self, part)
            if stats is not None:
                entry[part] = stats.to_dict()
        if self.first_query_ms is not None:
            entry["first_query_ms"] = self.first_query_ms
        return {**entry, **self.extra}


@dataclass(frozen=True)
class LatencySummary(LatencyStats, _Section):
    """The `latency_ms` section: the system's single-query latency (each timed query through every
    leg plus fusion) and `legs`: each leg's own."""

    _FIELD = "latency_ms"

    legs: dict[str, LegLatency] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str = "latency_ms") -> LatencySummary:
        data = read.object(data, where)
        legs = read.optional_mapping(data, "legs", f"{where}.legs") or {}
        return cls(**cls._parse_stats(read, data, where),
                   legs={str(name): LegLatency.parse(read, stats, f"{where}.legs.{name}") for name, stats in legs.items()},
                   extra=_unknown(data, (*LATENCY_STATS, "legs")))

    def leg(self, name: str) -> LegLatency:
        """A leg's latency; unmeasured (n = 0) for a leg the file does not time."""
        return self.legs.get(name, LegLatency())

    def to_dict(self) -> dict[str, Any]:
        entry = self._stats_dict()
        if self.legs:
            entry["legs"] = {name: stats.to_dict() for name, stats in self.legs.items()}
        return {**entry, **self.extra}


@dataclass(frozen=True)
class LegIndexCost:
    """A leg's index: build time, size (None when the leg cannot tell), how many indexes (one per
    scope) and the leg's own `index_stats()` (graph nodes, ANN recall, ...) in `stats`."""

    build_seconds: float = 0.0
    size_bytes: int | None = None
    indexes: int | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> LegIndexCost:
        data = read.object(data, where)
        return cls(build_seconds=read.number(data, "build_seconds", f"{where}.build_seconds")
                   if "build_seconds" in data else 0.0,
                   size_bytes=read.optional_count(data, "size_bytes", f"{where}.size_bytes"),
                   indexes=read.optional_count(data, "indexes", f"{where}.indexes"),
                   stats=_unknown(data, ("build_seconds", "size_bytes", "indexes")))

    @classmethod
    def of(cls, build_seconds: float, size_bytes: int | None, indexes: int | None,
           stats: dict[str, Any]) -> LegIndexCost:
        """A leg's index cost from the run; the leg's own `stats` cannot replace the section's keys."""
        return cls(build_seconds=float(build_seconds), size_bytes=None if size_bytes is None else int(size_bytes),
                   indexes=None if indexes is None else int(indexes),
                   stats=_unknown(dict(stats), ("build_seconds", "size_bytes", "indexes")))

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"build_seconds": self.build_seconds, "size_bytes": self.size_bytes}
        if self.indexes is not None:
            entry["indexes"] = self.indexes
        return {**entry, **self.stats}


@dataclass(frozen=True)
class IndexCost(_Section):
    """The `index` section: the whole system's build time and size (None when a leg cannot tell),
    and each leg's."""

    _FIELD = "index"

    build_seconds: float | None = None
    size_bytes: int | None = None
    legs: dict[str, LegIndexCost] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str = "index") -> IndexCost:
        data = read.object(data, where)
        legs = read.optional_mapping(data, "legs", f"{where}.legs") or {}
        return cls(build_seconds=read.number(data, "build_seconds", f"{where}.build_seconds")
                   if data.get("build_seconds") is not None else None,
                   size_bytes=read.optional_count(data, "size_bytes", f"{where}.size_bytes"),
                   legs={str(name): LegIndexCost.parse(read, leg, f"{where}.legs.{name}") for name, leg in legs.items()},
                   extra=_unknown(data, ("build_seconds", "size_bytes", "legs")))

    def to_dict(self) -> dict[str, Any]:
        if _is_empty(self):
            return {}
        return {"build_seconds": self.build_seconds, "size_bytes": self.size_bytes,
                "legs": {name: leg.to_dict() for name, leg in self.legs.items()}, **self.extra}


@dataclass(frozen=True)
class Throughput(_Section):
    """The `throughput` section: the batch path (`search_many`) over every query."""

    _FIELD = "throughput"

    queries: int | None = None
    search_seconds: float | None = None
    fusion_seconds: float | None = None
    queries_per_second: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("queries", "search_seconds", "fusion_seconds", "queries_per_second")

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str = "throughput") -> Throughput:
        data = read.object(data, where)
        numbers: dict[str, Any] = {key: read.number(data, key, f"{where}.{key}")
                                   for key in cls._KEYS if data.get(key) is not None}
        if "queries" in numbers:
            numbers["queries"] = int(numbers["queries"])
        return cls(**numbers, extra=_unknown(data, cls._KEYS))


@dataclass(frozen=True)
class Manifest(_Section):
    """Versions, platform and time: what is needed to reproduce (or distrust) a result."""

    _FIELD = "manifest"

    recall_kit: str | None = None
    #: Distribution -> version of each leg's plugin (None: not installed as a distribution).
    plugins: dict[str, str | None] = field(default_factory=dict)
    #: Leg -> its context expansion options, for the legs that have one.
    context: dict[str, dict[str, Any]] = field(default_factory=dict)
    python: str | None = None
    platform: str | None = None
    cpu_count: int | None = None
    seed: int | None = None
    time: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("recall_kit", "plugins", "context", "python", "platform", "cpu_count", "seed", "time")

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str = "manifest") -> Manifest:
        data = read.object(data, where)
        plugins = read.optional_mapping(data, "plugins", f"{where}.plugins") or {}
        context = read.optional_mapping(data, "context", f"{where}.context") or {}
        return cls(recall_kit=read.optional_string(data, "recall_kit", f"{where}.recall_kit"),
                   plugins={str(name): read.optional_string(plugins, name, f"{where}.plugins.{name}")
                            for name in plugins},
                   context={str(leg): read.mapping(context, leg, f"{where}.context.{leg}") for leg in context},
                   python=read.optional_string(data, "python", f"{where}.python"),
                   platform=read.optional_string(data, "platform", f"{where}.platform"),
                   cpu_count=read.optional_count(data, "cpu_count", f"{where}.cpu_count"),
                   seed=None if data.get("seed") is None else int(read.number(data, "seed", f"{where}.seed")),
                   time=read.optional_string(data, "time", f"{where}.time"),
                   extra=_unknown(data, cls._KEYS))


@dataclass(frozen=True)
class LegAttribution:
    """What one leg contributed, measured at `attribution_depth` (see docs/result-schema.md)."""

    relevant_in_top_k: int = 0
    relevant_only_this_leg: int = 0
    relevant_pushed_out: int = 0
    unique_in_top_k: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("relevant_in_top_k", "relevant_only_this_leg", "relevant_pushed_out", "unique_in_top_k")

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> LegAttribution:
        data = read.object(data, where)
        return cls(**{key: read.count(data, key, f"{where}.{key}") for key in cls._KEYS},
                   extra=_unknown(data, cls._KEYS))

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self._KEYS} | self.extra


@dataclass(frozen=True)
class LegOutsideCorpus:
    """A live leg's hits on ids the evaluated corpus does not hold (memories its store has and the
    snapshot lacks), scored as unjudged, non-relevant hits; and those of them the dataset marks
    sensitive (a privacy finding). Ids and counts only, never text."""

    #: Hits outside the corpus, over every query (at the depth the leg searched).
    hits: int = 0
    #: Query id -> its hits outside the corpus (queries with none are left out).
    queries: dict[str, int] = field(default_factory=dict)
    #: Query id -> the sensitive ids the leg returned for it (queries with none are left out).
    sensitive: dict[str, list[str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    _KEYS = ("hits", "queries", "sensitive_hits", "sensitive")

    @property
    def sensitive_hits(self) -> int:
        """How many hits were sensitive memories, over every query."""
        return sum(len(ids) for ids in self.sensitive.values())

    @classmethod
    def parse(cls, read: DocumentReader, data: Any, where: str) -> LegOutsideCorpus:
        data = read.object(data, where)
        queries = read.optional_mapping(data, "queries", f"{where}.queries") or {}
        sensitive = read.optional_mapping(data, "sensitive", f"{where}.sensitive") or {}
        return cls(hits=read.count(data, "hits", f"{where}.hits"),
                   queries={str(query): read.count(queries, query, f"{where}.queries.{query}") for query in queries},
                   sensitive={str(query): read.strings(sensitive, query, f"{where}.sensitive.{query}")
                              for query in sensitive},
                   extra=_unknown(data, cls._KEYS))

    def to_dict(self) -> dict[str, Any]:
        return {"hits": self.hits, "queries": self.queries, "sensitive_hits": self.sensitive_hits,
                "sensitive": self.sensitive} | self.extra

