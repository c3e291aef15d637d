"""Composition of a system from names: `fts5+dense+graph`, `--fusion`, `--weights`, `-o`, `--config`."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import recall_kit.registry as registry
from recall_kit.errors import OptionError, SpecError
from recall_kit.masking import mask_values
from recall_kit.measure.systems.adapters import load_object, make_factory
from recall_kit.measure.systems.context import ContextOptions, check_context_keys, split_leg_options
from recall_kit.options import build_options
from recall_kit.types import Fusion, Retriever


@dataclass
class SystemSpec:
    """A system as names and strings: what the command line or a TOML file says."""

    retriever: str
    fusions: list[str] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    #: Options by leg or fusion name: {"dense": {"model": "..."}, "rrf": {"k": 60}}.
    options: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def leg_names(self) -> list[str]:
        return split_legs(self.retriever)

    @property
    def label(self) -> str:
        """A short human name: `fts5+dense (rrf > exact-bonus)`."""
        if not self.fusions:
            return self.retriever
        return f"{self.retriever} ({' > '.join(self.fusions)})"

    def subset(self, legs: Sequence[str]) -> SystemSpec:
        """The system made of some of these legs: the same fusion chain, weights and options for
        them. A single leg has no fusion: it is the leg's own ranking."""
        fusions = list(self.fusions) if len(legs) > 1 else []
        keep = set(legs) | set(fusions)
        return SystemSpec(
            retriever="+".join(legs),
            fusions=fusions,
            weights={name: weight for name, weight in self.weights.items() if name in legs},
            options={name: dict(values) for name, values in self.options.items() if name in keep},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "retriever": self.retriever,
            "fusions": list(self.fusions),
            "weights": dict(self.weights),
            # Masked as the result's `system` is (a DSN's password): sweep.json writes this.
            "options": {name: _redacted(name, values) for name, values in self.options.items()},
        }


def _redacted(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """A leg's or fusion's raw options with every value its Options marks `redact` masked, and
    every secret in the rest (`mask_secrets`)."""
    out = dict(values)
    for kind in (registry.retrievers, registry.fusions):
        entry = kind.all().get(name)
        options_class = getattr(entry.obj, "Options", None) if entry is not None else None
        if options_class is None or not dataclasses.is_dataclass(options_class):
            continue
        for option in dataclasses.fields(options_class):
            redact = option.metadata.get("redact")
            if redact is not None and isinstance(out.get(option.name), str):
                out[option.name] = redact(out[option.name])
    return mask_values(out)


def split_legs(retriever: str) -> list[str]:
    """`fts5+dense` -> ["fts5", "dense"]; rejects empty and repeated legs."""
    legs = [part.strip() for part in retriever.split("+")]
    if not retriever.strip() or any(not leg for leg in legs):
        raise SpecError(f"Bad --retriever {retriever!r}: expected NAME or NAME+NAME+...")
    repeated = sorted({leg for leg in legs if legs.count(leg) > 1})
    if repeated:
        raise SpecError(f"Bad --retriever {retriever!r}: leg {repeated[0]!r} appears twice.")
    return legs


def parse_weights(text: str | None) -> dict[str, float]:
    """`fts5=1,dense=0.5` -> {"fts5": 1.0, "dense": 0.5}; an empty entry or a leg named twice is refused."""
    weights: dict[str, float] = {}
    if text is None:
        return weights
    for part in (part.strip() for part in text.split(",")):
        if not part:
            raise OptionError(f"Bad --weights {text!r}: an empty entry; expected LEG=NUMBER,LEG=NUMBER.")
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise OptionError(f"Bad --weights entry {part!r}: expected LEG=NUMBER.")
        if name.strip() in weights:
            raise OptionError(f"Bad --weights {text!r}: leg {name.strip()!r} is given twice.")
        weights[name.strip()] = parse_weight(value, f"Bad --weights entry {part!r}")
    return weights


def split_target(target: str) -> tuple[str, str]:
    """`rrf.k` -> ("rrf", "k"); a leg's context option `bm25.context.window` -> ("bm25",
    "context.window"). ("", "") when there is no NAME.KEY."""
    owner, dot, key = target.strip().rpartition(".")
    if not dot or not owner.strip() or not key.strip():
        return "", ""
    owner, key = owner.strip(), key.strip()
    base, dot, last = owner.rpartition(".")
    if dot and base and last == "context":
        return base, f"context.{key}"
    return owner, key


def parse_weight(value: str, context: str) -> float:
    """One leg weight: a finite number >= 0, else OptionError starting with `context`."""
    try:
        number = float(value)
    except ValueError:
        raise OptionError(f"{context}: weight {value!r} is not a number.") from None
    if not math.isfinite(number) or number < 0:
        raise OptionError(f"{context}: weights are finite and >= 0.")
    return number


def parse_option_assignments(assignments: Sequence[str]) -> dict[str, dict[str, Any]]:
    """[`dense.model=PATH`, `rrf.k=60`] -> {"dense": {"model": "PATH"}, "rrf": {"k": "60"}}."""
    options: dict[str, dict[str, Any]] = {}
    for assignment in assignments:
        target, sep, value = assignment.partition("=")
        owner, key = split_target(target)
        if not sep or not owner:
            raise OptionError(f"Bad option {assignment!r}: expected NAME.KEY=VALUE (e.g. rrf.k=60).")
        options.setdefault(owner, {})[key] = value
    return options


_CONFIG_TABLES = ("system", "weights", "options")
_SYSTEM_KEYS = ("fusion", "retriever")


def _unknown_key(path: Path, where: str, key: str, known: Sequence[str]) -> SpecError:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else f" Known: {', '.join(known)}."
    return SpecError(f"{path}: unknown {where} {key!r}.{hint}")


def load_config(path: Path) -> SystemSpec:
    """Read a TOML experiment file: [system] retriever/fusion, [weights], [options.NAME].

    A misspelled table or key is refused (with the nearest known name), not ignored."""
    if path.is_dir():
        raise SpecError(f"{path}: is a folder; --config takes a TOML file.")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such config file.") from None
    except OSError as error:
        raise SpecError(f"{path}: cannot read ({error.strerror}).") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise SpecError(f"{path}: not valid TOML ({error}).") from None
    except RecursionError:
        raise SpecError(f"{path}: not valid TOML (nested too deeply).") from None
    for table, value in data.items():
        if table not in _CONFIG_TABLES:
            raise _unknown_key(path, "table", table, list(_CONFIG_TABLES))
        if not isinstance(value, dict):
            raise SpecError(f"{path}: {table} must be a table ([{table}]), got {type(value).__name__}.")
    system = data.get("system", {})
    for key in system:
        if key not in _SYSTEM_KEYS:
            raise _unknown_key(path, "key in [system]", key, _SYSTEM_KEYS)
    if "retriever" not in system:
        raise SpecError(f"{path}: missing [system] retriever = \"...\".")
    if not isinstance(system["retriever"], str):
        raise SpecError(f"{path}: [system] retriever must be text, like \"fts5+dense\".")
    fusions = system.get("fusion", [])
    fusions = [fusions] if isinstance(fusions, str) else fusions
    if not isinstance(fusions, list) or not all(isinstance(name, str) for name in fusions):
        raise SpecError(f"{path}: [system] fusion must be a name or a list of names.")
    weights = data.get("weights", {})
    for name, value in weights.items():
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not math.isfinite(value) or value < 0):
            raise SpecError(f"{path}: weight {name!r} must be a finite number >= 0.")
    options = data.get("options", {})
    for name, values in options.items():
        if not isinstance(values, dict):
            raise SpecError(f"{path}: [options] {name} = {values!r}: options are a table, "
                            f"[options.{name}] with KEY = VALUE lines.")
    return SystemSpec(
        retriever=system["retriever"],
        fusions=list(fusions),
        weights={str(name): float(value) for name, value in weights.items()},
        options={str(name): dict(values) for name, values in options.items()},
    )


def merge_specs(base: SystemSpec | None, override: SystemSpec) -> SystemSpec:
    """The command line (`override`) over the config file (`base`). A flag that replaces the
    file's legs (--retriever) or fusion chain (--fusion) also drops the file's options and weights
    for the legs and fusions it removed: they belong to what was replaced."""
    if base is None:
        return override
    retriever = override.retriever or base.retriever
    fusions = override.fusions or base.fusions
    removed = set()
    if override.retriever:
        removed |= set(base.leg_names) - set(split_legs(retriever))
    if override.fusions:
        removed |= set(base.fusions) - set(fusions)
    options = {name: dict(values) for name, values in base.options.items() if name not in removed}
    for name, values in override.options.items():
        options.setdefault(name, {}).update(values)
    weights = {name: weight for name, weight in base.weights.items() if name not in removed}
    return SystemSpec(retriever=retriever, fusions=fusions, weights={**weights, **override.weights}, options=options)


@dataclass
class Leg:
    """One retriever of a system: its name, how to make a fresh instance, its options and weight."""

    name: str
    factory: Callable[[], Retriever]
    options: Any
    weight: float
    plugin: str
    #: False for an adapted instance or callable: one object, which cannot be indexed per scope.
    per_scope: bool = True
    #: The host's context expansion of the memories this leg indexes (None: as loaded).
    context: ContextOptions | None = None


@dataclass
class System:
    """A built system: its legs and its fusion chain, ready for the runner.

    Built once (`build_system`, `as_system`, `subset`) and passed down as is: its label and
    weights are worked out here, when it is made, so the runner only reads them (the result's
    `system` section is `recall_kit.measure.result.SystemInfo.of(system)`)."""

    spec: SystemSpec
    legs: list[Leg]
    fusions: list[Fusion]
    fusion_names: list[str]
    label: str = field(init=False)
    #: Each leg's weight, by leg name.
    weights: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.label = self.spec.label
        self.weights = {leg.name: leg.weight for leg in self.legs}

    def depth(self, k: int) -> int:
        """How many hits each leg returns: what the deepest fusion step asks for, at least k."""
        return max([k] + [fusion.depth(k) for fusion in self.fusions])

    def subset(self, legs: Sequence[str]) -> System:
        """The system made of some of these legs (`SystemSpec.subset`), from the legs and fusions
        already built: nothing is looked up or built again."""
        by_name = {leg.name: leg for leg in self.legs}
        unknown = [name for name in legs if name not in by_name]
        if unknown:
            raise SpecError(f"{unknown[0]!r} is not a leg of {self.spec.retriever!r}.")
        chained = len(legs) > 1
        return System(spec=self.spec.subset(legs), legs=[by_name[name] for name in legs],
                      fusions=list(self.fusions) if chained else [],
                      fusion_names=list(self.fusion_names) if chained else [])


def _resolve_leg(name: str) -> tuple[Any, str]:
    if ":" in name:
        return load_object(name), name.partition(":")[0]
    registration = registry.retrievers.get(name)
    return registration.obj, registration.plugin


def build_system(spec: SystemSpec) -> System:
    """Look every name up, check weights and options, and return a runnable System."""
    leg_names = spec.leg_names
    fusion_names = list(spec.fusions)
    known = set(leg_names) | set(fusion_names)
    for owner in spec.options:
        if owner not in known:
            raise OptionError(
                f"Option for {owner!r}, which is not a leg or fusion of this system "
                f"(legs: {', '.join(leg_names)}; fusions: {', '.join(fusion_names) or 'none'})."
            )
    for name in spec.weights:
        if name not in leg_names:
            raise OptionError(
                f"Weight for {name!r}, which is not a leg (legs: {', '.join(leg_names)})."
            )
    if len(fusion_names) != len(set(fusion_names)):
        raise SpecError("A fusion appears twice in --fusion; each step is named once.")
    for name in fusion_names:
        check_context_keys(name, spec.options.get(name, {}))
    missing = [(registry.retrievers, name) for name in leg_names
               if ":" not in name and name not in registry.retrievers.names()]
    missing += [(registry.fusions, name) for name in fusion_names if name not in registry.fusions.names()]
    if missing:
        raise registry.unknown_names_error(missing)
    legs = []
    for name in leg_names:
        target, plugin = _resolve_leg(name)
        factory, options_class = make_factory(target, name if ":" in name else None)
        raw, context = split_leg_options(name, spec.options.get(name, {}))
        if options_class is type(None):
            if raw:
                raise OptionError(f"Retriever {name!r} takes no options.")
            options = None
        else:
            options = build_options(f"retriever {name!r}", options_class, raw)
        per_scope = isinstance(target, type)
        legs.append(
            Leg(
                name=name,
                factory=functools.partial(factory, options),
                options=options,
                weight=spec.weights.get(name, 1.0),
                plugin=plugin,
                per_scope=per_scope,
                context=context,
            )
        )
    fusions = []
    for name in fusion_names:
        fusions.append(registry.fusions.create(name, spec.options.get(name, {})))
    if len(legs) > 1 and not fusions:
        raise SpecError(
            f"{spec.retriever!r} has {len(legs)} legs and needs --fusion to combine them. "
            f"Available: {', '.join(registry.fusions.names()) or '(none installed)'}."
        )
    if len(legs) > 1 and not fusions[0].combines_legs:
        raise SpecError(
            f"Fusion {fusion_names[0]!r} only re-ranks a fused list; put a fusion that combines "
            f"legs first (e.g. --fusion rrf --fusion {fusion_names[0]})."
        )
    if len(legs) > 1 and all(leg.weight == 0 for leg in legs):
        raise OptionError("Every leg has weight 0: nothing can be retrieved.")
    return System(spec=spec, legs=legs, fusions=fusions, fusion_names=fusion_names)


def build_retriever(name: str, options: dict[str, Any] | None = None) -> Retriever:
    """A fresh, unbuilt instance of the retriever `name` (registered, or `package.module:Class`),
    made as a one-leg system's leg is made: the name looked up, `options` checked as `-o` options
    are, a class with only `retrieve()` adapted. For a plugin that composes another retriever (the
    graph's `seed_retriever`); `recall_kit.plugin.build_retriever`."""
    spec = SystemSpec(retriever=name, options={name: dict(options or {})})
    retriever: Retriever = build_system(spec).legs[0].factory()
    return retriever


def as_system(system: Any) -> System:
    """What `run_benchmark` takes, as a built System: a System as it is; a SystemSpec or a spec
    string built (`build_system`); a Retriever class or instance, an object with
    `retrieve(query, k)` or a bare callable made a one-leg system."""
    if isinstance(system, System):
        return system
    if isinstance(system, SystemSpec):
        return build_system(system)
    if isinstance(system, str):
        return build_system(SystemSpec(retriever=system))
    factory, options_class = make_factory(system)
    name = getattr(system, "name", None) or getattr(system, "__name__", None) or type(system).__name__
    options = options_class() if options_class is not type(None) else None
    leg = Leg(name=str(name), factory=lambda: factory(options), options=options, weight=1.0,
              plugin="(python)", per_scope=isinstance(system, type))
    return System(spec=SystemSpec(retriever=str(name)), legs=[leg], fusions=[], fusion_names=[])
