"""`study.toml`: what a study compares, on which store, decided by which metrics (read and checked)."""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.errors import SpecError

if TYPE_CHECKING:
    from recall_kit.measure.systems.system import SystemSpec

#: The store kinds `[store]` may name, and the keys each one takes.
STORE_KEYS = {
    "dataset": (),
    "jsonl": (),
    "sqlite": ("table", "id_col", "text_col", "sensitive_col", "category_col", "tags_col", "importance_col",
               "created_at_col", "scope_col"),
}

_TABLES = {"study", "store", "evaluation_set", "judging", "systems", "ablation", "sweep", "production", "cost"}
_KEYS = {
    "study": {"name", "folder", "seed", "hook_k", "decision_metrics", "exploratory_metrics", "baseline",
              "resamples", "executor", "executor_address", "margin"},
    "evaluation_set": {"queries", "qrels", "exact", "exact_options", "generate", "generate_options", "min_queries"},
    "judging": {"pool_depth", "judge", "options", "agreement", "min_kappa", "people", "sample", "scale"},
    "ablation": {"system"},
    "sweep": {"system", "grid", "holdout", "guards", "target"},
    "production": {"system", "substrate", "embedding_model", "priors"},
    "cost": {"latency_sample"},
}
_SYSTEM_KEYS = {"name", "config", "retriever", "fusion", "weights", "options"}


@dataclass(frozen=True)
class StoreConfig:
    """Where the memories come from: a dataset folder, a JSONL corpus or an SQLite table."""

    kind: str
    path: Path
    #: The sqlite importer's column mapping (`table`, `id_col`, `text_col`, `sensitive_col`, ...).
    columns: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SystemConfig:
    """One candidate: its name in the study and the system, as names and options."""

    name: str
    retriever: str
    fusions: list[str] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The TOML file it was read from (None: written inline in study.toml).
    config: Path | None = None
    #: Options study.toml sets over that file's, as `-o LEG.KEY=VALUE` pairs (its command line).
    overrides: list[str] = field(default_factory=list)

    @property
    def legs(self) -> list[str]:
        return [leg for leg in self.retriever.split("+") if leg]

    def spec(self) -> SystemSpec:
        from recall_kit.measure.systems.system import SystemSpec

        return SystemSpec(retriever=self.retriever, fusions=list(self.fusions), weights=dict(self.weights),
                          options={name: dict(values) for name, values in self.options.items()})


@dataclass(frozen=True)
class StudyConfig:
    """A parsed study.toml. Paths are absolute (relative ones are taken from the file's folder)."""

    source: Path
    name: str
    folder: Path
    store: StoreConfig
    systems: list[SystemConfig]
    baseline: str
    hook_k: int
    decision_metrics: list[str]
    exploratory_metrics: list[str]
    seed: int = 0
    resamples: int = 2000
    queries: str = "dataset"
    qrels: Path | None = None
    exact: int = 0
    exact_options: dict[str, Any] = field(default_factory=dict)
    #: Other registered query generators (recall-kit-llm's paraphrase, multihop) -> how many queries.
    generate: dict[str, int] = field(default_factory=dict)
    generate_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    min_queries: int = 50
    pool_depth: int = 10
    judge: str = "qrels"
    judge_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    agreement: Path | None = None
    #: People's grade files (`recall-kit label`'s), globs allowed; None: FOLDER/labels/*.jsonl.
    people: list[str] | None = None
    #: With a model judge: how many of the pairs ordered by what they can move it judges (0: the whole pool).
    sample: int = 0
    ablation_system: str = ""
    sweep_system: str = ""
    sweep_grid: list[str] = field(default_factory=list)
    sweep_holdout: float | None = None
    sweep_guards: list[str] = field(default_factory=list)
    sweep_target: str = ""
    production: dict[str, Any] = field(default_factory=dict)
    latency_sample: int = 40
    #: Where the ablation's and the sweep's tasks run: "local" (in turn, here) or "ray" (`--executor ray`).
    executor: str = "local"
    executor_address: str | None = None
    #: `[study] margin`: a simpler system within this much of the best on every decision metric (its
    #: interval's lower end) is "as good as" it (non-inferiority); None: no margin, significance decides.
    margin: float | None = None
    #: `[judging] min_kappa`: judge agreement below this makes the verdict provisional.
    min_kappa: float = 0.6
    #: `[judging] scale`: the grades the label page offers, "binary" (0, 1) or "graded" (0-3).
    scale: str = "binary"

    def system(self, name: str) -> SystemConfig:
        for system in self.systems:
            if system.name == name:
                return system
        raise SpecError(f"{self.source}: no system named {name!r} in [[systems]] "
                        f"(have: {', '.join(s.name for s in self.systems)}).")

    @property
    def metrics(self) -> list[str]:
        """Every metric scored: the decision metrics first, then the exploratory ones."""
        return list(dict.fromkeys([*self.decision_metrics, *self.exploratory_metrics]))

    @property
    def depth(self) -> int:
        """How deep each system's ranking is kept: the pool's depth, the hook's k and every cutoff."""
        cutoffs = [int(m) for metric in self.metrics for m in re.findall(r"@(\d+)$", metric)]
        return max([self.pool_depth, self.hook_k, 10, *cutoffs])


def _fail(path: Path, what: str) -> SpecError:
    return SpecError(f"{shown_path(path)}: {what}")


def _check_keys(path: Path, table: str, data: dict[str, Any], known: set[str]) -> None:
    for key in data:
        if key not in known:
            raise _fail(path, f"unknown key {key!r} in [{table}] (known: {', '.join(sorted(known))}).")


def _table(path: Path, data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise _fail(path, f"{name} must be a table ([{name}]).")
    if name in _KEYS:
        _check_keys(path, name, value, _KEYS[name])
    return value


def _typed(path: Path, where: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _fail(path, f"{where} must be {names}, got {value!r}.")
    return value


def _strings(path: Path, where: str, value: Any) -> list[str]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _fail(path, f"{where} must be a list of names.")
    return list(value)


def _resolve(source: Path, where: str, value: str) -> Path:
    """A path the study file `source` names (`where`: its key), relative to the file's folder."""
    if "\x00" in value:  # no filesystem takes one; Python's path functions raise ValueError on it
        raise _fail(source, f"{where} {value!r}: a path cannot hold a NUL character.")
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else (source.parent / candidate).resolve()


def _store(path: Path, data: dict[str, Any]) -> StoreConfig:
    store = _table(path, data, "store")
    kinds = [kind for kind in STORE_KEYS if kind in store]
    if len(kinds) != 1:
        raise _fail(path, "[store] needs exactly one of dataset = \"DIR\", jsonl = \"FILE\", sqlite = \"FILE\".")
    kind = kinds[0]
    _check_keys(path, "store", store, {kind, *STORE_KEYS[kind]})
    columns = {key: _typed(path, f"[store] {key}", store[key], str) for key in STORE_KEYS[kind] if key in store}
    return StoreConfig(kind=kind, path=_resolve(path, f"[store] {kind}", _typed(path, f"[store] {kind}", store[kind], str)),
                       columns=columns)


def _system(path: Path, index: int, entry: Any) -> SystemConfig:
    where = f"[[systems]] #{index + 1}"
    if not isinstance(entry, dict):
        raise _fail(path, f"{where} must be a table.")
    _check_keys(path, "systems", entry, _SYSTEM_KEYS)
    name = _typed(path, f"{where} name", entry.get("name"), str)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise _fail(path, f"{where} name {name!r}: use letters, digits, '.', '_' and '-' (it names a folder).")
    if "config" in entry:
        if set(entry) - {"name", "config", "options"}:
            raise _fail(path, f"{where} ({name}): config = \"...\" takes only options beside it "
                              "(put the rest in that file).")
        from recall_kit.measure.systems.system import load_config

        config = _resolve(path, f"{where} config", _typed(path, f"{where} config", entry["config"], str))
        spec = load_config(config)
        override = _typed(path, f"{where} ({name}) options", entry.get("options", {}), dict)
        return SystemConfig(name=name, retriever=spec.retriever, fusions=list(spec.fusions),
                            weights=dict(spec.weights), options=_merged(spec.options, override), config=config,
                            overrides=option_flags(override))
    retriever = _typed(path, f"{where} ({name}) retriever", entry.get("retriever"), str)
    fusions = entry.get("fusion", [])
    fusions = _strings(path, f"{where} ({name}) fusion", [fusions] if isinstance(fusions, str) else fusions)
    weights = _typed(path, f"{where} ({name}) weights", entry.get("weights", {}), dict)
    for leg, weight in weights.items():
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not math.isfinite(weight) or weight < 0:
            raise _fail(path, f"{where} ({name}) weight {leg!r} must be a finite number >= 0.")
    options = _typed(path, f"{where} ({name}) options", entry.get("options", {}), dict)
    for leg, values in options.items():
        _typed(path, f"{where} ({name}) options.{leg}", values, dict)
    return SystemConfig(name=name, retriever=retriever, fusions=fusions,
                        weights={str(k): float(v) for k, v in weights.items()},
                        options={str(k): dict(v) for k, v in options.items()})


def _merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` over `base`, table by table (a study's options over a system file's)."""
    out = dict(base)
    for key, value in override.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def option_flags(options: dict[str, Any], prefix: str = "") -> list[str]:
    """Nested options as `-o` pairs: {"bm25": {"context": {"window": 0}}} -> ["bm25.context.window=0"]."""
    out = []
    for key, value in options.items():
        if isinstance(value, dict):
            out += option_flags(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}={str(value).lower() if isinstance(value, bool) else value}")
    return out


def _number(path: Path, where: str, value: Any, low: float, integer: bool = True) -> Any:
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    _typed(path, where, value, kinds)
    if value < low:
        raise _fail(path, f"{where} must be at least {low}, got {value!r}.")
    return value


def default_folder(study_file: Path) -> str:
    """The study folder when `[study] folder` is not given: named after the study file
    (`study.toml` -> `study-out`, `b.toml` -> `b-out`), so two study files in one folder never share one."""
    return f"{study_file.stem}-out"


#: How much of `[production]` the study copies into its document: a few names, each a short line.
MAX_PRIORS = 64
MAX_PRODUCTION_TEXT = 300


def _production(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """`[production]`, bounded: the document copies it, so a list of millions of priors (or a value
    megabytes long) is refused here, not written into study.json and study.md."""
    production = _table(path, data, "production")
    for key, value in production.items():
        values = value if isinstance(value, list) else [value]
        if key == "priors":
            _strings(path, "[production] priors", value)
            if len(values) > MAX_PRIORS:
                raise _fail(path, f"[production] priors names {len(values)} priors; at most {MAX_PRIORS} "
                                  "(the fields production ranks with, such as \"importance\").")
        for item in values:
            if isinstance(item, str) and len(item) > MAX_PRODUCTION_TEXT:
                raise _fail(path, f"[production] {key}: a value of {len(item)} characters; at most "
                                  f"{MAX_PRODUCTION_TEXT} (a name).")
    if len(repr(production)) > MAX_PRIORS * MAX_PRODUCTION_TEXT:
        raise _fail(path, "[production] is too large to be copied into the document; it names what production "
                          "runs (substrate, embedding_model, priors), a few short names.")
    return production


def load_study(path: str | Path) -> StudyConfig:
    """Read and check `study.toml`; a mistake is one `SpecError` naming the file and the key (the
    checks run in the file's order: [study], [[systems]], [evaluation_set], [judging], [sweep], ...)."""
    source, data = _read_toml(path)
    study = _table(source, data, "study")
    systems = _systems(source, data)
    hook_k = _number(source, "[study] hook_k", study.get("hook_k", 5), 1)
    decision = _strings(source, "[study] decision_metrics",
                        study.get("decision_metrics", [f"recall@{hook_k}", f"mrr@{hook_k}"]))
    if not decision:
        raise _fail(source, "[study] decision_metrics names no metric.")
    evaluation = _table(source, data, "evaluation_set")
    judging = _table(source, data, "judging")
    sweep = _table(source, data, "sweep")
    queries = _typed(source, "[evaluation_set] queries", evaluation.get("queries", "dataset"), str)
    if queries not in ("dataset", "generated"):
        _resolve(source, "[evaluation_set] queries", queries)  # a path: checked as every path the file names
    config = StudyConfig(
        source=source,
        name=_typed(source, "[study] name", study.get("name", source.stem), str),
        folder=_resolve(source, "[study] folder", _typed(source, "[study] folder",
                                                                  study.get("folder", default_folder(source)), str)),
        store=_store(source, data),
        systems=systems,
        baseline=_typed(source, "[study] baseline", study.get("baseline", systems[0].name), str),
        hook_k=hook_k,
        decision_metrics=decision,
        exploratory_metrics=_strings(source, "[study] exploratory_metrics", study.get("exploratory_metrics", [])),
        seed=_number(source, "[study] seed", study.get("seed", 0), 0),
        resamples=_number(source, "[study] resamples", study.get("resamples", 2000), 1),
        queries=queries,
        **_evaluation_set(source, evaluation),
        **_judging(source, judging),
        ablation_system=_typed(source, "[ablation] system", _table(source, data, "ablation").get("system", ""), str),
        **_sweep(source, sweep, decision[0]),
        production=_production(source, data),
        executor=_typed(source, "[study] executor", study.get("executor", "local"), str),
        executor_address=study.get("executor_address"),
        latency_sample=_number(source, "[cost] latency_sample", _table(source, data, "cost").get("latency_sample", 40), 0),
        margin=None if study.get("margin") is None else _number(source, "[study] margin", study["margin"], 0.0,
                                                                integer=False),
        min_kappa=_number(source, "[judging] min_kappa", judging.get("min_kappa", 0.6), -1.0, integer=False),
        scale=_scale(source, judging.get("scale", "binary")),
    )
    _check_references(config)
    return config


def study_file(path: str | Path) -> Path:
    """The study file a command was given: the file itself, or a folder's: the `study.toml` in it,
    the study file a study folder's manifest names (`study-out/`), or the one `.toml` file in it
    with a `[study]` table. A folder with none, or several, is one line naming them."""
    given = Path(path)
    if not given.is_dir():
        return given
    if (given / "study.toml").is_file():
        return given / "study.toml"
    manifest = given / "manifest.json"
    if manifest.is_file():
        import json

        try:
            named = json.loads(manifest.read_text(encoding="utf-8")).get("study")
        except (OSError, ValueError, AttributeError):
            named = None
        if isinstance(named, str) and (given / named).is_file():
            return given / named
    found = sorted(candidate for candidate in given.glob("*.toml") if _has_study_table(candidate))
    if len(found) == 1:
        return found[0]
    if found:
        raise SpecError(f"{shown_path(given)}: a folder with {len(found)} study files "
                        f"({', '.join(candidate.name for candidate in found)}); give one.")
    raise SpecError(f"{shown_path(given)}: a folder with no study file (study.toml); give the study file, "
                    "or write one: recall-kit study init.")


def _has_study_table(path: Path) -> bool:
    try:
        return any(line.strip() == "[study]" for line in path.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return False


def shown_path(path: str | Path) -> str:
    """A path as errors name it: relative to the current folder when it is inside it
    (`examples/study.toml`), else absolute, and the current folder itself absolute (not "."); the
    same whether the user typed it relative or not."""
    absolute = Path(os.path.abspath(path))
    try:
        inside = absolute.relative_to(Path.cwd())
    except ValueError:
        return str(absolute)
    return str(inside) if inside.parts else str(absolute)


def _read_toml(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The study file's resolved path and its tables, every table name known."""
    path = shown_path(study_file(path))
    source = Path(path).resolve()
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such study file.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise SpecError(f"{path}: not valid TOML ({error}).") from None
    except RecursionError:
        raise SpecError(f"{path}: not valid TOML (nested too deeply).") from None
    for table in data:
        if table not in _TABLES:
            raise _fail(source, f"unknown table [{table}] (known: {', '.join(sorted(_TABLES))}).")
    return source, data


def _systems(source: Path, data: dict[str, Any]) -> list[SystemConfig]:
    """`[[systems]]`: at least two, each name once."""
    entries = data.get("systems") or []
    if not isinstance(entries, list):
        raise _fail(source, f"systems = {type(entries).__name__}: write each system as a [[systems]] table.")
    systems = [_system(source, index, entry) for index, entry in enumerate(entries)]
    if len(systems) < 2:
        raise _fail(source, "a study compares at least two [[systems]] (the baseline and a candidate).")
    names = [system.name for system in systems]
    if len(set(names)) != len(names):
        raise _fail(source, f"two [[systems]] share a name ({', '.join(sorted(n for n in names if names.count(n) > 1))}).")
    return systems


def _evaluation_set(source: Path, evaluation: dict[str, Any]) -> dict[str, Any]:
    """`[evaluation_set]`'s fields of the StudyConfig (its `queries` aside)."""
    return {
        "qrels": _resolve(source, "[evaluation_set] qrels", evaluation["qrels"]) if "qrels" in evaluation else None,
        "exact": _number(source, "[evaluation_set] exact", evaluation.get("exact", 0), 0),
        "exact_options": _typed(source, "[evaluation_set] exact_options", evaluation.get("exact_options", {}), dict),
        "generate": {str(name): _number(source, f"[evaluation_set] generate.{name}", count, 1)
                     for name, count in _typed(source, "[evaluation_set] generate", evaluation.get("generate", {}),
                                               dict).items()},
        "generate_options": _typed(source, "[evaluation_set] generate_options",
                                   evaluation.get("generate_options", {}), dict),
        "min_queries": _number(source, "[evaluation_set] min_queries", evaluation.get("min_queries", 50), 1),
    }


def _judging(source: Path, judging: dict[str, Any]) -> dict[str, Any]:
    """`[judging]`'s fields of the StudyConfig (`min_kappa` and `scale` aside: checked last)."""
    return {
        "pool_depth": _number(source, "[judging] pool_depth", judging.get("pool_depth", 10), 1),
        "judge": _typed(source, "[judging] judge", judging.get("judge", "qrels"), str),
        "judge_options": _typed(source, "[judging] options", judging.get("options", {}), dict),
        "agreement": _resolve(source, "[judging] agreement", judging["agreement"]) if judging.get("agreement") else None,
        "people": [str(_resolve(source, "[judging] people", p)) for p in _strings(source, "[judging] people", judging["people"])]
        if "people" in judging else None,
        "sample": _number(source, "[judging] sample", judging.get("sample", 0), 0),
    }


def _sweep(source: Path, sweep: dict[str, Any], first_decision: str) -> dict[str, Any]:
    """`[sweep]`'s fields of the StudyConfig (its target defaults to the first decision metric)."""
    grid = sweep.get("grid", [])
    return {
        "sweep_system": _typed(source, "[sweep] system", sweep.get("system", ""), str),
        "sweep_grid": [grid] if isinstance(grid, str) else _strings(source, "[sweep] grid", grid),
        "sweep_holdout": None if sweep.get("holdout") in (None, 0) else _number(
            source, "[sweep] holdout", sweep["holdout"], 0.0, integer=False),
        "sweep_guards": _strings(source, "[sweep] guards", sweep.get("guards", [])),
        "sweep_target": _typed(source, "[sweep] target", sweep.get("target", first_decision), str),
    }


def _scale(source: Path, value: Any) -> str:
    """`[judging] scale`: the name of one of the label page's scales."""
    from recall_kit.curate.scale import SCALES

    if value not in SCALES:
        raise _fail(source, f"[judging] scale = {value!r}: one of {', '.join(SCALES)}.")
    return str(value)


def _check_references(config: StudyConfig) -> None:
    """Names that must point at something: the baseline, the ablated and the swept system."""
    config.system(config.baseline)
    for where, name in (("[ablation] system", config.ablation_system), ("[sweep] system", config.sweep_system)):
        if name:
            try:
                config.system(name)
            except SpecError:
                raise _fail(config.source, f"{where} = {name!r} is not one of the [[systems]].") from None
    if config.queries != "dataset" and config.qrels is None and config.queries != "generated":
        raise _fail(config.source, "[evaluation_set] queries = FILE needs qrels = FILE beside it.")
    if config.queries == "generated" and config.exact < 1 and not config.generate:
        raise _fail(config.source, "[evaluation_set] queries = \"generated\" needs exact = N (N >= 1) or generate.")
    if config.executor not in ("local", "ray"):
        raise _fail(config.source, f"[study] executor = {config.executor!r}: use \"local\" or \"ray\".")
    if config.sweep_holdout is not None and not 0 < config.sweep_holdout < 1:
        raise _fail(config.source, f"[sweep] holdout must lie between 0 and 1, got {config.sweep_holdout}.")
