"""The result document (schema recall-kit/result/1): building its manifest, saving, loading, reporting."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import platform
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from recall_kit.dataset import summarise
from recall_kit.errors import ResultFileError, UnknownNameError
from recall_kit.fileio import is_special_file, write_json_atomic
from recall_kit.measure.systems.context import describe as describe_context
from recall_kit.options import options_to_dict
from recall_kit.types import Chart, Hit, Report, ReportTable

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


def _format(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4f}"
    return value


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
    def parse(cls, read: _Reader, data: Any, where: str) -> Self:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Any, source: str = "result") -> Self:
        return cls.parse(_Reader(source), data, cls._FIELD)

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
    def parse(cls, read: _Reader, data: Any, where: str) -> LegInfo:
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
    def parse(cls, read: _Reader, data: Any, where: str) -> FusionStep:
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
    def parse(cls, read: _Reader, data: Any, where: str = "system") -> SystemInfo:
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
    def parse(cls, read: _Reader, data: Any, where: str = "dataset") -> DatasetInfo:
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
    def _parse_stats(read: _Reader, data: dict[str, Any], where: str) -> dict[str, Any]:
        stats: dict[str, Any] = {}
        for stat in LATENCY_STATS:  # a NaN or negative latency passed `gate`
            if data.get(stat) is not None:
                value = _non_negative(read, read.number(data, stat, f"{where}.{stat}"), f"{where}.{stat}")
                stats[stat] = int(value) if stat == "n" else value
        return stats

    @classmethod
    def parse(cls, read: _Reader, data: Any, where: str) -> LatencyStats:
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
    def parse(cls, read: _Reader, data: Any, where: str) -> LegLatency:
        data = read.object(data, where)
        parts: dict[str, Any] = {part: LatencyStats.parse(read, data[part], f"{where}.{part}")
                                 for part in ("wait", "overhead") if data.get(part) is not None}
        if data.get("first_query_ms") is not None:
            parts["first_query_ms"] = _non_negative(
                read, read.number(data, "first_query_ms", f"{where}.first_query_ms"), f"{where}.first_query_ms")
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
    def parse(cls, read: _Reader, data: Any, where: str = "latency_ms") -> LatencySummary:
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
    def parse(cls, read: _Reader, data: Any, where: str) -> LegIndexCost:
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
    def parse(cls, read: _Reader, data: Any, where: str = "index") -> IndexCost:
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
    def parse(cls, read: _Reader, data: Any, where: str = "throughput") -> Throughput:
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
    def parse(cls, read: _Reader, data: Any, where: str = "manifest") -> Manifest:
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
    def parse(cls, read: _Reader, data: Any, where: str) -> LegAttribution:
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
    def parse(cls, read: _Reader, data: Any, where: str) -> LegOutsideCorpus:
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


@dataclass(frozen=True)
class QueryResult:
    """One query's entry in a result: its fused ranking, per-query metric values and attribution."""

    query_id: str
    stratum: str
    #: Document ids of the scored ranking, best first (trec_eval order), at most k of them.
    ranking: list[str]
    #: The fused score of each ranked id.
    scores: list[float]
    #: Metric name -> this query's value.
    metrics: dict[str, float]
    #: Id -> {leg: rank in that leg's own list}, for returned and relevant ids.
    found_by: dict[str, dict[str, int]] = field(default_factory=dict)
    scope: str | None = None
    #: Single-path latency of this query in ms (sampled queries only).
    latency_ms: float | None = None

    def hits(self) -> list[Hit]:
        return [Hit(doc, score) for doc, score in zip(self.ranking, self.scores, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"query_id": self.query_id, "stratum": self.stratum, "ranking": self.ranking,
                                 "scores": self.scores, "metrics": self.metrics, "found_by": self.found_by}
        if self.scope is not None:
            entry["scope"] = self.scope
        if self.latency_ms is not None:
            entry["latency_ms"] = self.latency_ms
        return entry


@dataclass
class BenchmarkResult:
    """One system's result on one dataset: the one place that builds, validates and reads the
    `recall-kit/result/1` document. Everything else asks it (accessors), never the raw JSON."""

    #: The system: spec, label, legs (name, plugin, weight, options), fusion chain.
    system: SystemInfo
    #: The dataset: name, path, fingerprint, counts.
    dataset: DatasetInfo
    k: int
    depth: int
    metric_names: list[str]
    #: Metric name -> its summary over every query (the mean; a count's sum). Use `mean(metric)`.
    #: A query count mixed in as "n" (as `aggregate` returns it) is dropped: `n_queries` says it.
    overall: dict[str, float]
    #: Stratum -> (metric name -> its summary over the stratum's queries). Use `mean(metric, stratum)`;
    #: a mixed-in "n" is dropped: `stratum_size(stratum)` says it.
    strata: dict[str, dict[str, float]]
    queries: list[QueryResult]
    #: Leg -> what it contributed (systems of several legs; measured at `attribution_depth`).
    attribution: dict[str, LegAttribution] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: The system's single-query latency in ms, and each leg's (`latency.legs`).
    latency: LatencySummary = field(default_factory=LatencySummary)
    #: Build cost and index size, the system's and each leg's (`index.legs`).
    index: IndexCost = field(default_factory=IndexCost)
    throughput: Throughput = field(default_factory=Throughput)
    wall_seconds: float = 0.0
    manifest: Manifest = field(default_factory=Manifest)
    #: Grades >= it counted as relevant for the binary metrics (trec_eval -l).
    relevance_level: int = 1
    #: Whether unjudged ids were dropped from each ranking before scoring (trec_eval -J).
    judged_only: bool = False
    #: The k asked for; `k` is larger when a metric's cutoff lay past it (None: not recorded).
    k_requested: int | None = None
    #: The depth the attribution was measured at: each leg's own top k (None: not recorded).
    attribution_depth: int | None = None
    #: Leg name -> queries it answered with no hits.
    empty_rankings: dict[str, int] = field(default_factory=dict)
    #: Live leg name -> its hits outside the corpus and sensitive hits (in-process legs: absent).
    outside_corpus: dict[str, LegOutsideCorpus] = field(default_factory=dict)
    #: Leg name -> {query id: why its search failed}, for failures accepted with --max-failed
    #: (scored as empty rankings; compare and gate refuse a result that has any).
    failed_queries: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.overall = {name: value for name, value in self.overall.items() if name != "n"}
        self.strata = {stratum: {name: value for name, value in means.items() if name != "n"}
                       for stratum, means in self.strata.items()}

    # -- reading ---------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return str(self.system.label or self.system.spec)

    @property
    def fingerprint(self) -> str | None:
        return self.dataset.fingerprint

    @property
    def query_ids(self) -> list[str]:
        return [query.query_id for query in self.queries]

    @property
    def n_queries(self) -> int:
        """How many queries were scored."""
        return len(self.queries)

    def mean(self, metric: str, stratum: str | None = None) -> float:
        """The mean of `metric` over every query, or over the queries of `stratum`."""
        means = self.overall if stratum is None else self.strata.get(stratum)
        if means is None:
            raise UnknownNameError(stratum or "", list(self.strata),
                                   f"No stratum {stratum!r} in this result. Strata: {', '.join(sorted(self.strata))}.")
        if metric not in self.metric_names:
            raise UnknownNameError(metric, self.metric_names,
                                   f"Metric {metric!r} was not scored. Scored: {', '.join(self.metric_names)}.")
        return float(means[metric])

    def stratum_size(self, stratum: str | None = None) -> int:
        """How many queries `stratum` holds (every query when None)."""
        if stratum is None:
            return self.n_queries
        size = sum(1 for query in self.queries if query.stratum == stratum)
        if not size and stratum not in self.strata:
            raise UnknownNameError(stratum, list(self.strata),
                                   f"No stratum {stratum!r} in this result. Strata: {', '.join(sorted(self.strata))}.")
        return size

    def means(self, stratum: str | None = None) -> dict[str, float]:
        """Metric name -> its summary (the mean; a count's sum) over every query or over `stratum`'s."""
        if stratum is not None and stratum not in self.strata:
            raise UnknownNameError(stratum, list(self.strata),
                                   f"No stratum {stratum!r} in this result. Strata: {', '.join(sorted(self.strata))}.")
        return dict(self.overall if stratum is None else self.strata[stratum])

    def summary_document(self, stratum: str | None = None) -> dict[str, float]:
        """`means(stratum)` as the result document writes them: with the query count as "n"."""
        return {**self.means(stratum), "n": self.stratum_size(stratum)}

    def stratum_of(self) -> dict[str, str]:
        """query_id -> stratum."""
        return {query.query_id: query.stratum for query in self.queries}

    def per_query(self, metric: str) -> dict[str, float]:
        """query_id -> value of `metric` for every query."""
        return {query.query_id: query.metrics[metric] for query in self.queries}

    @property
    def sensitive_hits(self) -> int:
        """Hits on memories the dataset marks sensitive, over every live leg and query."""
        return sum(leg.sensitive_hits for leg in self.outside_corpus.values())

    def sensitive_queries(self) -> list[str]:
        """The queries for which some live leg returned a sensitive memory, in query order."""
        hit = {query for leg in self.outside_corpus.values() for query in leg.sensitive}
        return [query_id for query_id in self.query_ids if query_id in hit]

    def rankings(self) -> dict[str, list[str]]:
        """query_id -> ranked document ids."""
        return {query.query_id: query.ranking for query in self.queries}

    def latencies(self) -> list[float]:
        """The sampled single-query latencies in ms, in query order."""
        return [query.latency_ms for query in self.queries if query.latency_ms is not None]

    def provenance(self, hidden: Collection[tuple[str, str, str]] = ()) -> list[tuple[str, str]]:
        """What this result measured, for a report's header: dataset, fingerprint, the versions and
        platform it ran on, when, and the system's options (less the `hidden` ones)."""
        memories = "?" if self.dataset.memories is None else self.dataset.memories
        rows = [("dataset", f"{self.dataset.display_name} ({memories} memories, {len(self.queries)} queries), "
                            f"fingerprint {(self.fingerprint or '?')[:12]}")]
        manifest = self.manifest
        versions = ", ".join([f"recall-kit {manifest.recall_kit or '?'}",
                              *(f"{name} {version or '?'}" for name, version in manifest.plugins.items())])
        rows.append(("software", f"{versions}; Python {_or_unknown(manifest.python)} on {_or_unknown(manifest.platform)}"))
        rows.append(("run at", f"{_or_unknown(manifest.time)} (seed {_or_unknown(manifest.seed)}, k {self.k})"))
        rows.append((f"system {self.label}", self.system.settings(hidden)))
        return rows

    # -- writing ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        document = {
            "schema": SCHEMA,
            "system": self.system.to_dict(),
            "dataset": self.dataset.to_dict(),
            "k": self.k,
            "k_requested": self.k if self.k_requested is None else self.k_requested,
            "depth": self.depth,
            "metrics": {"names": self.metric_names, "relevance_level": self.relevance_level,
                        "judged_only": self.judged_only, "overall": self.summary_document(),
                        "strata": {stratum: self.summary_document(stratum) for stratum in self.strata}},
            "attribution": {leg: counts.to_dict() for leg, counts in self.attribution.items()},
            "attribution_depth": self.k if self.attribution_depth is None else self.attribution_depth,
            "empty_rankings": self.empty_rankings,
            **({"outside_corpus": {leg: found.to_dict() for leg, found in self.outside_corpus.items()}}
               if self.outside_corpus else {}),
            "warnings": self.warnings,
            "queries": [query.to_dict() for query in self.queries],
            "latency_ms": self.latency.to_dict(),
            "index": self.index.to_dict(),
            "throughput": self.throughput.to_dict(),
            "wall_seconds": self.wall_seconds,
            "manifest": self.manifest.to_dict(),
        }
        if self.failed_queries:  # only a result with accepted failures has the key (older files stay as they were)
            document["failed_queries"] = self.failed_queries
        return document

    def save(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_dict())

    def write_run(self, path: str | Path, tag: str | None = None) -> None:
        """The rankings as a TREC run file (`qid Q0 docid rank score tag`), tagged with the spec."""
        from recall_kit.measure.score.trec import write_run

        write_run(path, {query.query_id: query.hits() for query in self.queries},
                  tag=tag or self.system.spec or "recall-kit")

    # -- loading ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> BenchmarkResult:
        source = Path(path)
        if is_special_file(source):  # a named pipe would block for ever
            raise ResultFileError(f"{source}: not a regular file (a named pipe or a device).")
        try:
            # An integer too long for int() (4,300 digits) is read as inf, so the field it sits in
            # is named ("queries[0].metrics.ndcg@10 is inf") rather than the file alone.
            data = json.loads(source.read_text(encoding="utf-8"), parse_int=_integer_or_inf)
        except FileNotFoundError:
            raise ResultFileError(f"{source}: no such result file.") from None
        except IsADirectoryError:
            raise ResultFileError(f"{source}: is a directory, not a result file.") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
            raise ResultFileError(f"{source}: not a JSON result file ({reason}).") from None
        except OSError as error:
            raise ResultFileError(f"{source}: cannot be read ({error.strerror}).") from None
        except ValueError as error:  # a number of more than 4300 digits
            raise ResultFileError(f"{source}: not a JSON result file ({str(error).split(';')[0]}).") from None
        return cls.from_dict(data, source=str(source))

    @classmethod
    def from_dict(cls, data: Any, source: str = "result") -> BenchmarkResult:
        """Validate a result document and build the typed result; a malformed one raises
        ResultFileError naming the file and the field at fault."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else None
            raise ResultFileError(f"{source}: expected schema {SCHEMA!r}, found {found!r}.")
        read = _Reader(source)
        metrics = read.mapping(data, "metrics")
        names = read.strings(metrics, "names", "metrics.names")
        bounds = _metric_bounds(names)
        queries: list[QueryResult] = []
        seen: set[str] = set()
        for index, entry in enumerate(read.sequence(data, "queries")):
            where = f"queries[{index}]"
            if not isinstance(entry, dict):
                raise read.error(f"{where} is not an object")
            query_id = read.string(entry, "query_id", f"{where}.query_id")
            if query_id in seen:
                raise read.error(f"{where}: query {query_id!r} appears twice")
            seen.add(query_id)
            values = read.mapping(entry, "metrics", f"{where}.metrics")
            for name in names:
                _check_share(read, name, read.number(values, name, f"{where}.metrics.{name}"),
                             f"{where} (query {query_id!r})", bounds[name])
            ranking = read.strings(entry, "ranking", f"{where}.ranking")
            scores = [float(s) for s in read.sequence(entry, "scores", f"{where}.scores")]
            if len(scores) != len(ranking):
                raise read.error(f"{where}: {len(ranking)} ranked ids but {len(scores)} scores")
            latency = entry.get("latency_ms")
            if latency is not None:
                latency = _non_negative(read, read.number(entry, "latency_ms", f"{where}.latency_ms"),
                                        f"{where}.latency_ms")
            queries.append(QueryResult(
                query_id=query_id,
                stratum=read.string(entry, "stratum", f"{where}.stratum"),
                ranking=ranking,
                scores=scores,
                metrics={name: float(value) for name, value in values.items()},
                found_by=dict(entry.get("found_by") or {}),
                scope=None if entry.get("scope") is None else str(entry["scope"]),
                latency_ms=None if latency is None else float(latency),
            ))
        overall = read.mapping(metrics, "overall", "metrics.overall")
        strata = read.mapping(metrics, "strata", "metrics.strata")
        for name in names:
            _check_share(read, name, read.number(overall, name, f"metrics.overall.{name}"), "metrics.overall",
                         bounds[name])
        for stratum, means in strata.items():
            read.object(means, f"metrics.strata.{stratum}")
        return cls(
            system=SystemInfo.parse(read, read.mapping(data, "system")),
            dataset=DatasetInfo.parse(read, read.mapping(data, "dataset")),
            k=int(read.number(data, "k")),
            depth=int(read.number(data, "depth" if "depth" in data else "k")),
            metric_names=names,
            overall={str(name): float(value) for name, value in overall.items() if name != "n"},
            strata={str(s): {str(name): float(value) for name, value in v.items() if name != "n"}
                    for s, v in strata.items()},
            queries=queries,
            attribution={str(leg): LegAttribution.parse(read, counts, f"attribution.{leg}")
                         for leg, counts in (read.optional_mapping(data, "attribution") or {}).items()},
            warnings=[str(w) for w in data.get("warnings") or []],
            latency=LatencySummary.parse(read, data.get("latency_ms") or {}),
            index=IndexCost.parse(read, data.get("index") or {}),
            throughput=Throughput.parse(read, data.get("throughput") or {}),
            wall_seconds=float(data.get("wall_seconds") or 0.0),
            manifest=Manifest.parse(read, data.get("manifest") or {}),
            relevance_level=int(read.number(metrics, "relevance_level", "metrics.relevance_level"))
            if "relevance_level" in metrics else 1,
            judged_only=bool(metrics.get("judged_only", False)),
            k_requested=None if data.get("k_requested") is None else int(data["k_requested"]),
            attribution_depth=None if data.get("attribution_depth") is None else int(data["attribution_depth"]),
            empty_rankings={str(leg): int(n) for leg, n in (data.get("empty_rankings") or {}).items()},
            outside_corpus={str(leg): LegOutsideCorpus.parse(read, found, f"outside_corpus.{leg}")
                            for leg, found in (read.optional_mapping(data, "outside_corpus") or {}).items()},
            failed_queries=_failed_queries(read, data, seen),
        )

    @property
    def n_failed(self) -> int:
        """How many queries failed on some leg (accepted with --max-failed; 0 for a whole result)."""
        return len({query_id for per_leg in self.failed_queries.values() for query_id in per_leg})

    def scoring_notes(self) -> list[str]:
        """What a reader must know about how relevance was scored, when it is not the default."""
        notes = []
        if self.relevance_level != 1:
            notes.append(f"relevant: grade >= {self.relevance_level} (trec_eval -l)")
        if self.judged_only:
            notes.append("judged only: unjudged ids were dropped from each ranking (trec_eval -J)")
        return notes

    def metrics_table(self) -> ReportTable:
        names = self.metric_names
        rows = [["overall", self.n_queries, *(_format(self.mean(m)) for m in names)]]
        for stratum in self.strata:
            rows.append([stratum, self.stratum_size(stratum), *(_format(self.mean(m, stratum)) for m in names)])
        whole = [name for name in names if "@" not in name]
        notes = []
        if whole:
            # A metric without a cutoff reads the whole ranking, and the ranking is the top k.
            notes.append(f"{', '.join(whole)}: computed over the top {self.k} (the scored depth k).")
        notes += self.scoring_notes()
        return ReportTable(title=f"{self.label} on {self.dataset.name}",
                           headers=["stratum", "n", *names], rows=rows, notes=notes)

    def per_query_table(self) -> ReportTable:
        """Each query's metric values, in the result's query order (trec_eval ``-q``)."""
        names = self.metric_names
        rows = [[query.query_id, query.stratum, *(_format(query.metrics[m]) for m in names)]
                for query in self.queries]
        return ReportTable(title=f"{self.label}: per query", headers=["query", "stratum", *names], rows=rows)

    def cost_table(self) -> ReportTable:
        latency = self.latency
        index = self.index
        rows = []
        def milliseconds(stats: LatencyStats) -> list[Any]:
            # With --latency-sample 0 nothing was timed: say so rather than print 0.0000 ms.
            if not stats.measured:
                return ["not measured"] * 3
            return [_format(stats.stat(key)) for key in ("p50", "p95", "p99")]

        for name, leg in index.legs.items():
            rows.append([name, *milliseconds(latency.leg(name)), _format(leg.build_seconds),
                         leg.size_bytes if leg.size_bytes is not None else "n/a"])
        if len(index.legs) > 1:
            rows.append(["system", *milliseconds(latency), _format(index.build_seconds),
                         index.size_bytes if index.size_bytes is not None else "n/a"])
        qps = self.throughput.queries_per_second
        timed = (f"single-query latency over {latency.n} queries" if latency.measured
                 else "single-query latency not measured (--latency-sample 0)")
        notes = [f"{timed}; batch throughput {qps} queries/s{self._throughput_measures()}"]
        for name, stats in latency.legs.items():
            if stats.wait is not None and stats.wait.measured and stats.overhead is not None:
                # a leg that waits on an outside system
                notes.append(f"{name}: p50 {_format(stats.wait.stat('p50'))} ms waiting on the system it calls, "
                             f"{_format(stats.overhead.stat('p50'))} ms client overhead")
        return ReportTable(
            title="Cost",
            headers=["leg", "p50 ms", "p95 ms", "p99 ms", "build s", "index bytes"],
            rows=rows,
            notes=notes,
        )

    def _throughput_measures(self) -> str:
        """What the batch throughput measured, for the legs that say how many of the batch's
        query embeddings came from a cache (`cached_query_embeddings`, dense's query cache):
        a cache read is not the model's speed."""
        said = {name: leg.stats["cached_query_embeddings"] for name, leg in self.index.legs.items()
                if isinstance(leg.stats.get("cached_query_embeddings"), int)}
        if not said:
            return ""
        cached = {name: count for name, count in said.items() if count > 0}
        if not cached:
            return " (cold: every query embedded)"
        legs = ", ".join(f"{name} {count} of {self.throughput.queries}" for name, count in cached.items())
        return (f" (with the query-embedding cache: {legs} read from it; "
                "-o dense.query_cache=false measures it cold)")

    def attribution_table(self) -> ReportTable | None:
        attribution = self.attribution
        if len(attribution) < 2:
            return None
        rows = [[name, v.relevant_in_top_k, v.relevant_only_this_leg, v.relevant_pushed_out, v.unique_in_top_k]
                for name, v in attribution.items()]
        k = self.k if self.attribution_depth is None else self.attribution_depth
        return ReportTable(
            title=f"What each leg contributed (measured at depth {k})",
            headers=["leg", f"relevant in top {k}", "relevant only it found", "relevant pushed out",
                     f"its own ids in top {k}"],
            rows=rows,
            notes=[f"a leg found a document when it ranked it in its own top {k}; "
                   f"pushed out: relevant ids in the leg's own top {k} that the fused top {k} lost"],
        )

    def report(self, per_query: bool = False) -> Report:
        """The eval report: metrics per stratum, costs, leg attribution; with `per_query`, also
        each query's values (trec_eval ``-q``)."""
        tables = [self.metrics_table(), self.cost_table()]
        if any(found.hits for found in self.outside_corpus.values()):  # not an all-zero table per live run
            tables.append(self.outside_table())
        attribution = self.attribution_table()
        if attribution is not None:
            tables.append(attribution)
        if per_query:
            tables.append(self.per_query_table())
        entries = self.system.option_entries()
        # The privacy finding is the command's one line on stderr (`eval`), not a note here too:
        # the outside table's sensitive columns carry its numbers.
        notes = [warning for warning in self.warnings if not warning.startswith(PRIVACY_PREFIX)]
        return Report(title=f"recall-kit eval: {self.label}", tables=tables,
                      notes=notes, data=self.to_dict(),
                      charts=self._charts(), provenance=self.provenance(hidden=entries),
                      provenance_details=[("options", _entries_text(entries))] if entries else [])

    def outside_table(self) -> ReportTable:
        """Each live leg's hits outside the corpus and, as a privacy finding, its sensitive hits."""
        rows = [[leg, found.hits, len(found.queries), found.sensitive_hits, len(found.sensitive)]
                for leg, found in self.outside_corpus.items()]
        notes = ["outside: ids the evaluated corpus does not hold, scored as unjudged, non-relevant hits"]
        return ReportTable(title="Hits outside the corpus (live legs)",
                           headers=["leg", "outside hits", "queries", "sensitive hits", "sensitive queries"],
                           rows=rows, notes=notes)

    def _charts(self) -> list[Chart | dict[str, Any]]:
        bars = {stratum: {m: self.mean(m, None if stratum == "overall" else stratum) for m in self.metric_names}
                for stratum in ["overall", *self.strata]}
        return [Chart(kind="bar", title="Metrics per stratum", groups=bars),
                Chart(kind="histogram", title="Single-query latency (ms)", values=self.latencies())]

    def summary(self) -> str:
        """The overall and per-stratum metrics as a plain-text table."""
        from recall_kit.reporting.formats import format_table

        return format_table(self.metrics_table(), "simple")


def _entries_text(entries: Sequence[tuple[str, str, str]]) -> str:
    """Option entries as one line: ``dense.model=x; fusion rrf.k=60``."""
    return "; ".join(f"{part}.{key}={value}" for part, key, value in entries)


def _or_unknown(value: Any) -> Any:
    return "?" if value is None else value


def _integer_or_inf(digits: str) -> int | float:
    """A JSON integer as int, or inf past the 4,300 digits int() reads (sys.int_info)."""
    try:
        return int(digits)
    except ValueError:
        return math.inf if not digits.startswith("-") else -math.inf


def _shown(value: Any) -> str:
    """A value as an error shows it: a long number by its length, never 5,000 digits."""
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__} of {len(text)} characters"


def _metric_bounds(names: Sequence[str]) -> dict[str, tuple[float, float] | None]:
    """Each metric name's bounds (`Metric.bounds` of its registered family); None for a metric
    not registered here (a plugin's, not installed) or declared unbounded."""
    from recall_kit import registry

    entries = registry.metrics.all()
    families = {name: name.split("@", 1)[0] for name in names}
    return {name: entries[family].obj.bounds if family in entries else None for name, family in families.items()}


def _check_share(read: _Reader, name: str, value: float, where: str,
                 bounds: tuple[float, float] | None) -> None:
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise read.error(f"{where}: metric {name!r} is {value}, outside [{bounds[0]:g}, {bounds[1]:g}]")


def _non_negative(read: _Reader, value: float, where: str) -> float:
    if value < 0:
        raise read.error(f"{where} is {value}, below 0")
    return value


def _failed_queries(read: _Reader, data: dict[str, Any], query_ids: set[str]) -> dict[str, dict[str, str]]:
    """`failed_queries`: leg -> {query id of this result: reason}; a hand-edited file that drops
    or garbles it must not pass as a whole result."""
    failed = read.optional_mapping(data, "failed_queries") or {}
    out: dict[str, dict[str, str]] = {}
    for leg, per_leg in failed.items():
        where = f"failed_queries.{leg}"
        read.object(per_leg, where)
        for query_id, reason in per_leg.items():
            if query_id not in query_ids:
                raise read.error(f"{where}: query {query_id!r} is not in queries")
            if not isinstance(reason, str):
                raise read.error(f"{where}.{query_id} is not a string")
        out[str(leg)] = dict(per_leg)
    return out


def load_result(path: str | Path) -> BenchmarkResult:
    """A result file (`eval --json`), validated: `BenchmarkResult.load`."""
    return BenchmarkResult.load(path)


def load_results(paths: Sequence[str | Path]) -> list[tuple[str, BenchmarkResult]]:
    """Load result files and label each by its system; a label used twice gets its file name."""
    results = [BenchmarkResult.load(path) for path in paths]
    labels = [result.label for result in results]
    out = []
    for path, label, result in zip(paths, labels, results, strict=True):
        if labels.count(label) > 1:
            label = f"{label} [{Path(path).name}]"
        out.append((label, result))
    return out


def check_comparable(named: Sequence[tuple[str, BenchmarkResult]]) -> list[str]:
    """Refuse results of different datasets or query sets; return the shared query ids in order."""
    if len(named) < 2:
        raise ResultFileError("Compare needs at least two result files.")
    base_label, base = named[0]
    base_fp = str(base.fingerprint)
    base_ids = base.query_ids
    for label, result in named[1:]:
        fp = str(result.fingerprint)
        if fp != base_fp:
            raise ResultFileError(
                f"{label!r} and {base_label!r} were run on different datasets (fingerprints "
                f"{fp[:12]} and {base_fp[:12]}); compare results of one dataset."
            )
        ids = set(result.query_ids)
        if ids != set(base_ids):
            only_here, only_base = len(ids - set(base_ids)), len(set(base_ids) - ids)
            raise ResultFileError(
                f"{label!r} and {base_label!r} hold different query sets ({only_here} queries only in "
                f"the first, {only_base} only in the second); compare results of one query set."
            )
    return base_ids


def check_scored_alike(named: Sequence[tuple[str, BenchmarkResult]]) -> None:
    """Refuse results scored with different relevance levels (trec_eval ``-l``) or judged-only
    settings (``-J``): their per-query values measure different things, so no delta between them
    says anything about the systems."""
    base_label, base = named[0]
    for label, result in named[1:]:
        if result.relevance_level != base.relevance_level:
            raise ResultFileError(
                f"{label!r} and {base_label!r} were scored with different relevance levels (-l "
                f"{result.relevance_level} and -l {base.relevance_level}); compare results scored alike "
                "(re-run eval with one -l)."
            )
        if result.judged_only != base.judged_only:
            scored, other = (label, base_label) if result.judged_only else (base_label, label)
            raise ResultFileError(
                f"{scored!r} was scored judged-only (-J) and {other!r} was not; compare results scored "
                "alike (re-run eval with or without -J for both)."
            )


class _Reader:
    """Typed field access for `from_dict`, each failure one line naming the file and the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, what: str) -> ResultFileError:
        return ResultFileError(f"{self.source}: {what}; not a valid {SCHEMA} document.")

    def _get(self, data: dict[str, Any], key: str, where: str | None) -> Any:
        if key not in data:
            raise self.error(f"missing {where or key!r}")
        return data[key]

    def mapping(self, data: dict[str, Any], key: str, where: str | None = None) -> dict[str, Any]:
        value = self._get(data, key, where)
        if not isinstance(value, dict):
            raise self.error(f"{where or key} is not an object")
        return value

    def sequence(self, data: dict[str, Any], key: str, where: str | None = None) -> list[Any]:
        value = self._get(data, key, where)
        if not isinstance(value, list):
            raise self.error(f"{where or key} is not a list")
        return value

    def string(self, data: dict[str, Any], key: str, where: str | None = None) -> str:
        value = self._get(data, key, where)
        if not isinstance(value, str):
            raise self.error(f"{where or key} is not a string")
        return value

    def strings(self, data: dict[str, Any], key: str, where: str | None = None) -> list[str]:
        values = self.sequence(data, key, where)
        if not all(isinstance(value, str) for value in values):
            raise self.error(f"{where or key} holds a non-string")
        return values

    def number(self, data: dict[str, Any], key: str, where: str | None = None) -> float:
        value = self._get(data, key, where)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"{where or key} is {_shown(value)}, not a finite number")
        try:
            number = float(value)
        except OverflowError:  # an integer past the largest double
            number = math.inf
        if not math.isfinite(number):
            raise self.error(f"{where or key} is {_shown(value)}, not a finite number")
        return number

    def object(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(f"{where} is not an object")
        return value

    def optional_mapping(self, data: dict[str, Any], key: str, where: str | None = None) -> dict[str, Any] | None:
        return None if data.get(key) is None else self.mapping(data, key, where)

    def optional_sequence(self, data: dict[str, Any], key: str, where: str | None = None) -> list[Any]:
        return [] if data.get(key) is None else self.sequence(data, key, where)

    def optional_string(self, data: dict[str, Any], key: str, where: str | None = None) -> str | None:
        return None if data.get(key) is None else self.string(data, key, where)

    def count(self, data: dict[str, Any], key: str, where: str | None = None) -> int:
        value = self.number(data, key, where)
        if value < 0 or not value.is_integer():
            raise self.error(f"{where or key} is {value!r}, not a count")
        return int(value)

    def optional_count(self, data: dict[str, Any], key: str, where: str | None = None) -> int | None:
        return None if data.get(key) is None else self.count(data, key, where)


# -- the decision documents, read back: what `compare`, `ablate` and `sweep` save ---------------------
# Their writers live in the decide layer (Comparison, Ablation, Sweep .to_dict); a reader of a saved
# document (the study) goes through these types, not through the documents' keys.

_T = TypeVar("_T")


@dataclass(frozen=True)
class SavedDelta:
    """One tested difference of a saved comparison: `system` against the baseline on `metric` in `scope`."""

    system: str
    metric: str
    scope: str
    n: int
    baseline: float
    value: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    #: Holm-adjusted within the row's family; None for a diagnostic row (not tested).
    p_holm: float | None
    significant: bool
    #: "primary" (decision), "exploratory" or "diagnostic".
    family: str = "primary"
    wins: int = 0
    ties: int = 0
    losses: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavedDelta:
        return cls(system=str(data["system"]), metric=str(data["metric"]), scope=str(data["scope"]),
                   n=int(data["n"]), baseline=float(data["baseline"]), value=float(data["value"]),
                   delta=float(data["delta"]), ci_low=float(data["ci_low"]), ci_high=float(data["ci_high"]),
                   p_value=float(data["p_value"]),
                   p_holm=None if data.get("p_holm") is None else float(data["p_holm"]),
                   significant=bool(data.get("significant")), family=str(data.get("family", "primary")),
                   wins=int(data.get("wins", 0)), ties=int(data.get("ties", 0)), losses=int(data.get("losses", 0)))


@dataclass(frozen=True)
class SavedComparison:
    """A saved `compare` document (comparison.json, or the comparison inside an ablation or a sweep)."""

    baseline: str
    systems: list[str]
    metrics: list[str]
    primary: list[str]
    resamples: int
    seed: int
    rows: list[SavedDelta]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavedComparison:
        test, bootstrap = data.get("test") or {}, data.get("bootstrap") or {}
        return cls(baseline=str(data["baseline"]), systems=[str(s) for s in data["systems"]],
                   metrics=[str(m) for m in data["metrics"]], primary=[str(m) for m in test.get("primary", [])],
                   resamples=int(bootstrap.get("resamples", 0)), seed=int(bootstrap.get("seed", 0)),
                   rows=[SavedDelta.from_dict(row) for row in data["rows"]])

    @classmethod
    def load(cls, path: str | Path) -> SavedComparison:
        return _parsed(path, cls.from_dict)

    def decision_rows(self, scope: str | None = None) -> list[SavedDelta]:
        """The primary family's rows (the decision), in `scope` when given."""
        return [row for row in self.rows if row.family == "primary" and (scope is None or row.scope == scope)]


@dataclass(frozen=True)
class SavedVariant:
    """One variant of a saved ablation: its legs and its overall means."""

    name: str
    kind: str
    legs: list[str]
    file: str | None
    means: dict[str, float]


@dataclass(frozen=True)
class SavedAblation:
    """A saved `ablate` document (ablation.json): the full system first, then each variant."""

    full: str
    variants: list[SavedVariant]
    comparison: SavedComparison

    @classmethod
    def load(cls, path: str | Path) -> SavedAblation:
        return _parsed(path, cls.from_dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavedAblation:
        return cls(full=str(data["full"]),
                   variants=[SavedVariant(name=str(v["name"]), kind=str(v["kind"]), legs=[str(x) for x in v["legs"]],
                                          file=v.get("file"), means={str(m): float(x) for m, x in v["overall"].items()
                                                                    if isinstance(x, int | float)})
                             for v in data["variants"]],
                   comparison=SavedComparison.from_dict(data["comparison"]))


@dataclass(frozen=True)
class SavedSweep:
    """A saved `sweep` document (sweep.json): the grid's outcome and the best setting's held-out comparison."""

    target: str
    guards: list[str]
    holdout: float | None
    tuning_queries: int
    test_queries: int
    settings: int
    eligible: int
    best_settings: dict[str, str]
    best_tuning_score: float
    best_test_score: float | None
    comparison: SavedComparison | None

    @classmethod
    def load(cls, path: str | Path) -> SavedSweep:
        return _parsed(path, cls.from_dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavedSweep:
        best = data["best"]
        return cls(target=str(data["target"]), guards=[str(g) for g in data.get("guards") or []],
                   holdout=data.get("holdout"), tuning_queries=len(data["tuning_queries"]),
                   test_queries=len(data["test_queries"]), settings=len(data["points"]),
                   eligible=sum(1 for point in data["points"] if point.get("eligible")),
                   best_settings={str(k): str(v) for k, v in best["settings"].items()},
                   best_tuning_score=float(best["tuning_score"]),
                   best_test_score=None if best.get("test_score") is None else float(best["test_score"]),
                   comparison=SavedComparison.from_dict(data["comparison"]) if data.get("comparison") else None)


def _parsed(path: str | Path, parse: Callable[[dict[str, Any]], _T]) -> _T:
    """A saved decision document read through `parse`; one line naming the file when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        return parse(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ResultFileError(f"{path}: not a readable saved document ({type(error).__name__}: {error}).") from None
