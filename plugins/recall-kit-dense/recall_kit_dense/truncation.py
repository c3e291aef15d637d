"""How many memory texts the model cut at its window, read off the tokenization it does anyway.

sentence-transformers tokenizes every batch it embeds, truncating each text at the model's window
and padding the batch to its longest row. A row whose attention mask is shorter than the batch's
padded width was not cut (a cut row fills the width), so only the rows that fill it need their
untruncated length (`token_lengths`): about one text per batch, instead of tokenizing the whole
corpus a second time, which cost ~1% of the CPU embedding time (docs/performance.md) and competes
with the tokenization that feeds a GPU.

`watch_tokenization` wraps the first module's `preprocess` and `tokenize` once per loaded model;
the wrapper records only while a `Watch` is set on the model (`watching`). Where the watch did not
see exactly the texts embedded (another sentence-transformers release, a module without an
attention mask, another thread's call in between), the caller counts every text as before.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recall_kit_dense.models import LoadedModel, token_lengths


@dataclass
class Watch:
    """What the model's first module tokenized while watched."""

    #: The model's window: a row this long or longer is looked at again whatever its batch.
    window: int
    #: How many texts it tokenized.
    seen: int = 0
    #: The texts (prompt included) whose row filled its batch's padded width or the window.
    filled: list[str] = field(default_factory=list)
    #: Set when a call's inputs or features could not be read: the count must be made in full.
    blind: bool = False

    def note(self, inputs: Any, prompt: Any, features: Any) -> None:
        mask = features.get("attention_mask") if isinstance(features, Mapping) else None
        shape: tuple[int, ...] = tuple(getattr(mask, "shape", ()))
        if (mask is None or len(shape) != 2 or not isinstance(inputs, Sequence)
                or len(inputs) != shape[0] or not all(isinstance(text, str) for text in inputs)
                or not (prompt is None or isinstance(prompt, str))):
            self.blind = True
            return
        width = int(shape[1])
        self.seen += len(inputs)
        for text, length in zip(inputs, mask.sum(1).tolist(), strict=True):
            if length >= width or length >= self.window:
                self.filled.append((prompt or "") + text)

    def truncated(self, loaded: LoadedModel, embedded: int) -> int | None:
        """The count, when the watch saw exactly `embedded` texts; None when it cannot tell."""
        if self.blind or self.seen != embedded or loaded.max_seq_length is None:
            return None
        lengths = token_lengths(loaded, self.filled)
        if lengths is None:
            return None
        return sum(1 for length in lengths if length > loaded.max_seq_length)


def _watched(loaded: LoadedModel, method: Callable[..., Any], depth: list[int]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(inputs: Any, *args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        try:
            features = method(inputs, *args, **kwargs)
        finally:
            depth[0] -= 1
        watch = loaded.watch
        if watch is not None and depth[0] == 0:  # one of the two calling the other records once
            watch.note(inputs, kwargs.get("prompt"), features)
        return features

    return call


def watch_tokenization(loaded: LoadedModel) -> None:
    """Wrap the first module's `preprocess` and `tokenize` (whichever it has) to report to
    `loaded.watch`; once per loaded model. A model without modules to wrap is left as it is."""
    if loaded.watched:
        return
    loaded.watched = True
    try:
        module = loaded.model[0]
    except (TypeError, IndexError, KeyError, AttributeError):
        return
    depth = [0]
    for name in ("preprocess", "tokenize"):
        method = getattr(module, name, None)
        if callable(method):
            setattr(module, name, _watched(loaded, method, depth))


@contextlib.contextmanager
def watching(loaded: LoadedModel) -> Iterator[Watch]:
    """A fresh `Watch` on `loaded` for the block (the memories' encode calls)."""
    watch_tokenization(loaded)
    watch = Watch(window=loaded.max_seq_length or 0)
    loaded.watch = watch
    try:
        yield watch
    finally:
        loaded.watch = None
