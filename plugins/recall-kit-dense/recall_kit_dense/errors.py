"""The dense plugin's own error: a model that cannot be found or loaded (its own module, so the
model loader and the packaged-model assembly both raise it without importing each other)."""

from __future__ import annotations

from recall_kit.plugin import RecallKitError


class DenseModelError(RecallKitError):
    """The model cannot be found or loaded; the message says why and what to do, in one line."""
