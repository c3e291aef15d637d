"""Adapters that let a plain object with `retrieve(query, k)`, or a bare callable, act as a Retriever,
and the loader for `--retriever package.module:Name`."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from recall_kit.errors import SpecError
from recall_kit.types import Corpus, Hit, Retriever


class ScoreTypeError(TypeError):
    """A hit's score that is no number (text such as "0.5", bytes, a bool): its message quotes no
    memory text, so it is shown as it is."""


def _score(value: Any, rank: int) -> float:
    """A hit's score as a float; text ("0.5") or a bool is refused, never read as a number."""
    if isinstance(value, (str, bytes, bool)):
        raise ScoreTypeError(f"hit {rank}'s score is {type(value).__name__}, not a number (return a float: "
                             "a score sent as text is a mistake to fix, not a number to guess)")
    return float(value)


def coerce_hits(output: Iterable[Any], k: int) -> list[Hit]:
    """Turn what a retriever returned into at most `k` hits, first occurrence of an id kept.

    Accepts `Hit`s, `(id, score)` pairs, or bare ids (scored 1/rank, so the order is kept).
    """
    if type(output) is list and k >= 1:  # the usual answer: distinct, well-typed Hits, kept as they are
        head = output[:k]
        ids = [item.id for item in head] if set(map(type, head)) <= {Hit} else None
        if (ids is not None and set(map(type, ids)) <= {str} and len(set(ids)) == len(ids)
                and set(map(type, [item.score for item in head])) <= {float}):
            return head
    hits: list[Hit] = []
    seen: set[str] = set()
    for rank, item in enumerate(output, start=1):
        if type(item) is Hit and type(item.id) is str and type(item.score) is float:
            hit = item  # already what it should be: no copy on the hot path
        elif isinstance(item, Hit):
            hit = Hit(str(item.id), _score(item.score, rank))
        elif isinstance(item, tuple) and len(item) == 2:
            hit = Hit(str(item[0]), _score(item[1], rank))
        else:
            hit = Hit(str(item), 1.0 / rank)
        if hit.id in seen:
            continue
        seen.add(hit.id)
        hits.append(hit)
        if len(hits) >= k:
            break
    return hits


class ObjectAdapter(Retriever):
    """Wraps an object with `search(query, k)` or `retrieve(query, k)` (and maybe `build_index`)."""

    def __init__(self, target: Any) -> None:
        super().__init__()
        self.target = target

    def build_index(self, corpus: Corpus) -> None:
        for method in ("build_index", "index", "fit"):
            if callable(getattr(self.target, method, None)):
                getattr(self.target, method)(corpus)
                return

    def search(self, query: str, k: int) -> list[Hit]:
        method = getattr(self.target, "search", None) or self.target.retrieve
        return coerce_hits(method(query, k), k)

    def search_many(self, queries, k):  # type: ignore[no-untyped-def]
        if callable(getattr(self.target, "search_many", None)):
            return [coerce_hits(hits, k) for hits in self.target.search_many(list(queries), k)]
        return [self.search(query, k) for query in queries]

    def index_size_bytes(self) -> int | None:
        method = getattr(self.target, "index_size_bytes", None)
        return method() if callable(method) else None

    def close(self) -> None:
        method = getattr(self.target, "close", None)
        if callable(method):
            method()


class CallableAdapter(Retriever):
    """Wraps a bare callable `fn(query, k)` returning ids, `(id, score)` pairs or hits."""

    def __init__(self, function: Callable[[str, int], Iterable[Any]]) -> None:
        super().__init__()
        self.function = function

    def build_index(self, corpus: Corpus) -> None:
        """A bare callable searches an index of its own; there is nothing to build."""

    def search(self, query: str, k: int) -> list[Hit]:
        return coerce_hits(self.function(query, k), k)


def load_object(path: str) -> Any:
    """Import `package.module:Name` (the name may be dotted: `module:Outer.Inner`)."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise SpecError(f"Bad retriever path {path!r}: expected package.module:Name.")
    if not all(part.isidentifier() for part in module_name.split(".")):  # `../../etc/passwd`
        raise SpecError(f"Bad retriever path {path!r}: {module_name!r} is not a dotted Python module name.")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise SpecError(
            f"Cannot import {module_name!r} for retriever {path!r}: {error}.{_import_hint(module_name, error)}"
        ) from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise SpecError(f"Module {module_name!r} has no attribute {attribute!r}.")
        target = getattr(target, part)
    return target


def _import_hint(module_name: str, error: ImportError) -> str:
    """What to do when `module:Name` does not import: a module in the current folder is not on
    Python's path when recall-kit runs as a command, so it needs PYTHONPATH=."""
    from pathlib import Path

    top = module_name.split(".")[0]
    if not isinstance(error, ModuleNotFoundError) or error.name not in (top, module_name):
        return ""
    if Path(f"{top}.py").is_file() or Path(top, "__init__.py").is_file():
        return (f" {top} is in the current folder, which a command does not search:"
                " run with PYTHONPATH=. (PYTHONPATH=. recall-kit eval ...).")
    return " Install it, or add its folder to PYTHONPATH (PYTHONPATH=. for the current folder)."


def make_factory(target: Any, spec: str | None = None) -> tuple[Callable[[Any], Retriever], type]:
    """A factory `options -> Retriever` for a registered or loaded object, and its Options class;
    `spec`, the `-r module:Name` it was loaded from, is named when it is not a retriever."""
    if inspect.isclass(target) and issubclass(target, Retriever):
        return target, target.Options
    if inspect.isclass(target):
        return (lambda options: ObjectAdapter(target())), type(None)
    if hasattr(target, "search") or hasattr(target, "retrieve"):
        return (lambda options: ObjectAdapter(target)), type(None)
    if callable(target):
        return (lambda options: CallableAdapter(target)), type(None)
    shown = repr(target) if len(repr(target)) <= 60 else f"a {type(target).__name__}"
    raise SpecError(
        f"{f'Retriever {spec!r} is {shown}, which' if spec else shown} is not a retriever: "
        "expected a Retriever subclass, an object with "
        "search() or retrieve(), or a callable (query, k) -> ids."
    )
