"""Metric names: a name (``recall@10``, ``ndcg_cut_10``, ``P.10``, a trec_eval set) -> MetricSpecs.

Parsing, aliases (ir_measures' and trec_eval's spellings), trec_eval's measure sets and their
expansion, and the closest-name hint for a misspelt one. The registry says which metrics exist;
this module only reads names. `recall_kit.measure.score.evaluation` re-exports the public names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from recall_kit.errors import DuplicateNameError, OptionError, PluginRunError, UnknownMetricError
from recall_kit.types import JudgedRankings, Metric

# The order the default metric set is shown in; families not listed follow by name. Only an
# order: which families exist, and which are defaults, comes from the registry.
_DEFAULT_DISPLAY_ORDER = ("recall", "ndcg", "mrr", "map", "judged")

_NAME = re.compile(r"^(?P<family>[^@\s]+)(?:@(?P<cutoff>.*))?$")
_ALIAS_CUTOFF = "{k}"
_TRAILING_NUMBER = re.compile(r"^(?P<stem>.*?)(?P<number>[0-9]+)$")
_TRAILING_DECIMAL = re.compile(r"^(?P<stem>.*?_)(?P<number>[0-9]{0,3}\.[0-9]{1,6})$")
# trec_eval's -m syntax, "P.10" for the measure it prints as "P_10".
_TREC_DOT = re.compile(r"^(?P<stem>[A-Za-z_]+)\.(?P<number>[0-9]+)$")
# ... and with a decimal parameter, "iprec_at_recall.0.25" (arriving as "iprec_at_recall.0.25", "0.5").
_TREC_DECIMAL_DOT = re.compile(r"^(?P<stem>[A-Za-z_]+)\.(?P<number>[0-9]{0,3}\.[0-9]{1,6})$")
_TREC_PARAMETER = re.compile(r"[0-9]*\.?[0-9]+")

#: trec_eval's measure sets, ``-m official`` (its default), ``-m set`` and ``-m all_trec``: the first
#: two as its measures.c lists them, ``all_trec`` as trec_eval 9.0.8 lists it plus ``dcg`` and
#: ``ideal_dcg`` (trec_eval 10's also holds unj, rbp, rbp_resid; docs/trec-eval.md). Each name is
#: resolved through `Metric.trec_eval`; those no registered metric answers to are named by
#: `trec_eval_names_missing`.
TREC_EVAL_SETS: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "utility",
                 "11pt_avg", "ideal_dcg", "dcg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P",
                 "set_map", "set_F", "num_nonrel_judged_ret"),
}

#: The order trec_eval prints its measures in, whatever order ``-m`` names them in: its measures.c
#: table (te_trec_measures) in trec_eval 10, which keeps 9.0.8's order and adds rbp, rbp_resid and
#: unj at the end. `score --report trec_eval` prints in this order; a measure trec_eval does not
#: have follows, in the order asked.
TREC_EVAL_PRINT_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
    "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success",
    "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "num_nonjudged_ret",
    "rbp", "rbp_resid", "unj",
)

# The alias table of the last registry state seen: (entries dict, {lowercase alias: family}).
_alias_cache: tuple[Any, dict[str, str]] | None = None

#: The largest cutoff a metric name may carry: far past any ranking, and within every index type.
MAX_CUTOFF = 2**31 - 1


@dataclass(frozen=True)
class MetricSpec:
    """One metric to compute: its display name (``recall@10``), family and cutoff."""

    name: str
    metric: Metric
    cutoff: int | None

    @property
    def rank_cutoff(self) -> int | None:
        """The depth of ranking the metric reads: its cutoff, or None where the cutoff is not a
        rank (``iprec_at_recall@50``: a recall level) or there is none (the whole ranking)."""
        return self.cutoff if self.metric.cutoff_unit == "rank" else None

    def compute(self, data: JudgedRankings) -> np.ndarray:
        """One finite float64 per query of `data`. A metric that raises, or returns the wrong
        length, NaN or an infinity, is one line naming it, its plugin and the hook's method."""
        import recall_kit.registry as registry

        registration = next((entry for entry in registry.metrics.all().values() if entry.obj is self.metric), None)
        plugin = registration.plugin if registration is not None else "?"

        def run() -> np.ndarray:
            return np.asarray(self.metric.compute(data, self.cutoff), dtype=np.float64)

        values = registration.call("compute", run) if registration is not None else run()
        if values.shape != (len(data.query_ids),):
            problem = f"returned shape {values.shape}, expected ({len(data.query_ids)},)"
        elif not np.isfinite(values).all():
            problem = f"returned {int((~np.isfinite(values)).sum())} values that are NaN or infinite"
        else:
            return values
        raise PluginRunError(f"Metric {self.name!r} (plugin {plugin!r}) failed in compute: {problem}.")


def _spec_name(family: str, cutoff: int | None) -> str:
    return family if cutoff is None else f"{family}@{cutoff}"


def _parse(name: str) -> tuple[str, int | None]:
    text = name.strip() if isinstance(name, str) else ""
    match = _NAME.match(text)
    if not match:
        raise OptionError(
            f"Bad metric name {name!r}: write a family with an optional cutoff, e.g. 'recall@10'."
        )
    raw = match.group("cutoff")
    if raw is None:
        return match.group("family"), None
    if not re.fullmatch(r"[0-9]+", raw.strip()):  # 0 is checked once the metric is known
        raise OptionError(
            f"Bad cutoff in metric {name!r}: the cutoff after '@' is a whole number >= 1, "
            "e.g. 'recall@10'."
        )
    if int(raw) > MAX_CUTOFF:
        raise OptionError(
            f"Cutoff in metric {name!r} is too large: at most {MAX_CUTOFF} (far past any ranking)."
        )
    return match.group("family"), int(raw)


def resolve_metrics(names: Sequence[str] | None) -> list[MetricSpec]:
    """Turn metric names (``recall@10``, ``mrr``, ``map@100``) into specs, in order, no repeats.

    A name may also be one users of trec_eval or ir_measures write (``ndcg_cut_10``, ``P_10``,
    ``recip_rank``, ``nDCG@10``, ``RR``, ...): each metric's `aliases`, matched without regard to
    case, and trec_eval's ``-m`` syntax (``P.5``, ``ndcg_cut.5,10`` split into ``["ndcg_cut.5",
    "10"]``). The spec keeps recall-kit's canonical name (``ndcg@10``), so ``ndcg_cut_10`` and
    ``ndcg@10`` asked together give one column.

    `None` or an empty sequence gives the defaults: every registered family's `default_cutoffs`.
    An unknown family raises `UnknownMetricError` (listing what is registered); a cutoff on a
    family that takes none, a missing required cutoff, or a malformed cutoff raises `OptionError`.
    """
    import recall_kit.registry as registry

    if not names:
        return _default_specs(registry.metrics.all())
    specs: list[MetricSpec] = []
    seen: set[str] = set()
    dotted_stem: str | None = None
    for raw in names:
        expanded = _trec_eval_expansion(raw, registry.metrics.all())
        if expanded is not None:
            for spec in expanded:
                if spec.name not in seen:
                    seen.add(spec.name)
                    specs.append(spec)
            dotted_stem = None
            continue
        # trec_eval's "-m P.5,10" arrives split at the comma: a bare number after a dotted
        # trec_eval name is one more cutoff of that measure.
        if dotted_stem is not None and isinstance(raw, str) and _TREC_PARAMETER.fullmatch(raw.strip()):
            raw = f"{dotted_stem}.{raw.strip()}"
        dotted = (_TREC_DOT.match(raw.strip()) or _TREC_DECIMAL_DOT.match(raw.strip())) if isinstance(raw, str) else None
        dotted_stem = dotted.group("stem") if dotted else None
        family, cutoff = _parse(raw)
        entries = registry.metrics.all()
        if family not in entries:
            family, cutoff = _resolve_alias(raw, family, cutoff, entries)
        metric = entries[family].obj
        if cutoff is not None and cutoff > MAX_CUTOFF:
            raise OptionError(f"Cutoff in metric {raw!r} is too large: at most {MAX_CUTOFF} (far past any ranking).")
        if cutoff is not None and cutoff < (0 if metric.cutoff_unit == "percent" else 1):
            raise OptionError(
                f"Bad cutoff in metric {raw!r}: the cutoff after '@' is a whole number >= 1, "
                "e.g. 'recall@10'."
            )
        if cutoff is not None and metric.cutoff == "none":
            raise OptionError(
                f"Metric {family!r} takes no cutoff: write {family!r}, not {raw.strip()!r}."
            )
        if cutoff is None and metric.cutoff == "required":
            raise OptionError(f"Metric {family!r} needs a cutoff: write e.g. '{family}@10'.")
        name = _spec_name(family, cutoff)
        if name not in seen:
            seen.add(name)
            specs.append(MetricSpec(name=name, metric=metric, cutoff=cutoff))
    return specs


def _trec_eval_names(entries: dict[str, Any]) -> dict[str, Metric]:
    """trec_eval's measure names (`Metric.trec_eval`) to the metrics that compute them."""
    return {name: registration.obj for registration in entries.values() for name in registration.obj.trec_eval}


def _trec_eval_expansion(raw: Any, entries: dict[str, Any]) -> list[MetricSpec] | None:
    """The specs a trec_eval measure set (``official``, ``all_trec``) or bare family (``P``,
    ``ndcg_cut``: at trec_eval's default cutoffs) stands for; None for any other name."""
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    known = _trec_eval_names(entries)
    if text in TREC_EVAL_SETS:
        wanted = [name for name in TREC_EVAL_SETS[text] if name in known]
    elif text in known and _takes_trec_cutoffs(text, known[text]):
        wanted = [text]
    else:
        return None
    specs: list[MetricSpec] = []
    for name in wanted:
        metric = known[name]
        cutoffs: Sequence[int | None] = metric.trec_cutoffs if _takes_trec_cutoffs(name, metric) else (None,)
        specs.extend(MetricSpec(_spec_name(metric.name, cutoff), metric, cutoff) for cutoff in cutoffs)
    return specs


def _takes_trec_cutoffs(name: str, metric: Metric) -> bool:
    return bool(metric.trec_cutoffs) and (metric.cutoff == "required" or f"{name}_{_ALIAS_CUTOFF}" in metric.aliases)


def trec_eval_names_missing(names: Sequence[str] | None) -> list[str]:
    """The trec_eval measures that the sets among `names` (``-m all_trec``) hold and no registered
    metric computes (``runid``, ``iprec_at_recall``, ...), in the set's order, for a note."""
    import recall_kit.registry as registry

    known = _trec_eval_names(registry.metrics.all())
    missing: list[str] = []
    for raw in names or ():
        for name in TREC_EVAL_SETS.get(raw.strip() if isinstance(raw, str) else "", ()):
            if name not in known and name not in missing:
                missing.append(name)
    return missing


def trec_eval_name(spec: MetricSpec) -> tuple[str, str] | None:
    """(trec_eval's family, the name trec_eval prints) for a metric trec_eval computes, else None.

    ``precision@5`` -> ("P", "P_5"); ``iprec_at_recall@10`` -> ("iprec_at_recall",
    "iprec_at_recall_0.10"); ``rprec_mult@200`` -> ("Rprec_mult", "Rprec_mult_2.00"); ``mrr`` ->
    ("recip_rank", "recip_rank"); ``ndcg@10`` -> ("ndcg_cut", "ndcg_cut_10"). A cutoff trec_eval
    has no parameter for (``mrr@10``) gives None, as does a measure it lacks (``judged@10``).
    """
    metric = spec.metric
    if spec.cutoff is None:
        bare = [name for name in metric.trec_eval if f"{name}_{_ALIAS_CUTOFF}" not in metric.aliases]
        return (bare[0], bare[0]) if bare and metric.cutoff != "required" else None
    for family in metric.trec_eval:
        if f"{family}_{_ALIAS_CUTOFF}" in metric.aliases:
            number = f"{spec.cutoff / 100:.2f}" if metric.cutoff_unit == "percent" else str(spec.cutoff)
            return family, f"{family}_{number}"
    return None


def display_names(names: Sequence[str] | None) -> dict[str, str]:
    """recall-kit's name -> the name a report shows, for the names a user asked for: a measure asked
    by another spelling is shown by it (``Rprec_mult_2.0``, ``nDCG@10``), one asked through a
    trec_eval set, bare family or ``-m`` syntax (``all_trec``, ``P``, ``P.5,10``) by the name
    trec_eval prints (``P_5``). The first spelling wins; names asked as recall-kit writes them
    are left out (shown as they are)."""
    import recall_kit.registry as registry

    shown: dict[str, str] = {}
    dotted_stem: str | None = None
    for raw in names or ():
        if not isinstance(raw, str):
            continue
        text = raw.strip()
        expanded = _trec_eval_expansion(text, registry.metrics.all())
        if expanded is None and dotted_stem is not None and _TREC_PARAMETER.fullmatch(text):
            text = f"{dotted_stem}.{text}"
        dotted = _TREC_DOT.match(text) or _TREC_DECIMAL_DOT.match(text)
        dotted_stem = dotted.group("stem") if dotted else None
        if expanded is None:
            try:
                expanded = resolve_metrics([text])
            except (OptionError, UnknownMetricError):
                continue
        for spec in expanded:
            trec = trec_eval_name(spec) if (dotted or len(expanded) > 1 or text != expanded[0].name) else None
            label = trec[1] if trec is not None and (dotted or len(expanded) > 1) else text
            if spec.name not in shown and label != spec.name:
                shown[spec.name] = label
    return shown


def canonical_metric_name(name: str) -> str:
    """recall-kit's name for a metric name as a user wrote it (``ndcg_cut_10`` -> ``ndcg@10``).

    For commands that read names back from result files (compare, gate): a name no registered
    metric answers to (a plugin's, not installed here) is returned as written, stripped.
    """
    try:
        return resolve_metrics([name])[0].name
    except UnknownMetricError:
        return name.strip()


def metric_aliases(entries: dict[str, Any] | None = None) -> dict[str, str]:
    """Every alias of the registered metrics, lowercased, to the family it names.

    Each family's own name is an alias of itself (``NDCG@10`` finds ``ndcg``). An alias that two
    families claim raises `DuplicateNameError` naming both plugins.
    """
    global _alias_cache
    import recall_kit.registry as registry

    if entries is None:
        entries = registry.metrics.all()
    if _alias_cache is not None and _alias_cache[0] is entries:
        return _alias_cache[1]
    table: dict[str, str] = {}
    owners: dict[str, str] = {}
    for family, registration in entries.items():
        metric: Metric = registration.obj
        implicit = {
            "required": [f"{family}@{_ALIAS_CUTOFF}"],
            "optional": [family, f"{family}@{_ALIAS_CUTOFF}"],
            "none": [family],
        }[metric.cutoff]
        for alias in (*implicit, *metric.aliases):
            key = alias.lower()
            if key in table and table[key] != family:
                raise DuplicateNameError(
                    f"Metric alias {alias!r} is claimed by both {table[key]!r} "
                    f"({owners[key]!r}) and {family!r} ({registration.plugin!r})."
                )
            table[key] = family
            owners[key] = registration.plugin
    _alias_cache = (entries, table)
    return table


def _resolve_alias(
    raw: str, family: str, cutoff: int | None, entries: dict[str, Any]
) -> tuple[str, int | None]:
    """(family, cutoff) for a name whose family (as `_parse` read it) is not registered."""
    table = metric_aliases(entries)
    text = raw.strip().lower()
    candidates = [text]
    dotted = _TREC_DOT.match(text)
    if dotted:
        # A percent metric's trec_eval parameter is a fraction: iprec_at_recall.1 is recall 1.0.
        key = f"{dotted.group('stem')}_{_ALIAS_CUTOFF}"
        if key in table and entries[table[key]].obj.cutoff_unit == "percent":
            return table[key], int(dotted.group("number")) * 100
        candidates.append(f"{dotted.group('stem')}_{dotted.group('number')}")
    decimal_dot = _TREC_DECIMAL_DOT.match(text)  # -m iprec_at_recall.0.25
    if decimal_dot:
        candidates.append(f"{decimal_dot.group('stem')}_{decimal_dot.group('number')}")
    for candidate in candidates:
        if candidate in table:
            return table[candidate], None
        decimal = _TRAILING_DECIMAL.match(candidate)  # trec_eval's iprec_at_recall_0.10: percent 10
        if decimal and decimal.group("stem") + _ALIAS_CUTOFF in table:
            owner = table[decimal.group("stem") + _ALIAS_CUTOFF]
            if entries[owner].obj.cutoff_unit == "percent":
                return owner, round(float(decimal.group("number")) * 100)
        match = _TRAILING_NUMBER.match(candidate)
        if match:
            key = match.group("stem") + _ALIAS_CUTOFF
            if key in table:
                number = int(match.group("number"))
                if number > MAX_CUTOFF:
                    raise OptionError(
                        f"Bad cutoff in metric {raw!r}: the cutoff is a whole number from 1 to "
                        f"{MAX_CUTOFF}."
                    )
                return table[key], number
    # An alias written with a cutoff it does not take (Rprec@5), or without one it needs (ERR):
    # let the caller say so.
    for key in (family.lower(), family.lower() + "@" + _ALIAS_CUTOFF):
        if key in table:
            return table[key], cutoff
    raise UnknownMetricError(family, list(entries), _closest_name(raw.strip(), entries, table))


def _closest_name(text: str, entries: dict[str, Any], table: dict[str, str]) -> str | None:
    """The registered name or alias closest to a misspelt one, written with its cutoff."""
    number = _TRAILING_NUMBER.match(text)
    cutoff = number.group("number") if number else "10"
    spelled = {}  # lowercased -> as registered (P_{k}, not p_{k}); canonical names last, to win
    for family, registration in entries.items():
        for alias in (*registration.obj.aliases, f"{family}@{_ALIAS_CUTOFF}", family):
            if alias.lower() in table:
                spelled[alias.replace(_ALIAS_CUTOFF, cutoff).lower()] = alias.replace(_ALIAS_CUTOFF, cutoff)
    close = difflib.get_close_matches(text.lower(), list(spelled), n=max(1, len(spelled)), cutoff=0.75)
    if not close:
        return None

    def ratio(key: str) -> float:
        return difflib.SequenceMatcher(None, text.lower(), key).ratio()

    # Equally close, the name the tool writes wins: `recall10` is `recall@10`, not `recall_10`.
    tied = [key for key in close if ratio(key) == ratio(close[0])]
    return spelled[next((key for key in tied if "@" in key), tied[0])]


def _default_specs(registered: dict[str, Any]) -> list[MetricSpec]:
    def order(family: str) -> tuple[int, str]:
        if family in _DEFAULT_DISPLAY_ORDER:
            return _DEFAULT_DISPLAY_ORDER.index(family), family
        return len(_DEFAULT_DISPLAY_ORDER), family

    specs: list[MetricSpec] = []
    for family in sorted(registered, key=order):
        metric: Metric = registered[family].obj
        for cutoff in metric.default_cutoffs:
            specs.append(MetricSpec(name=_spec_name(family, cutoff), metric=metric, cutoff=cutoff))
    return specs
