"""Fixtures for the host's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import OverlapPlugin, write_dataset  # noqa: E402

from recall_kit.testing import registered_plugin  # noqa: E402


@pytest.fixture
def overlap_plugin():
    """The `overlap` retriever, registered for one test."""
    with registered_plugin(OverlapPlugin(), name="overlap-plugin") as plugin:
        yield plugin


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "tiny")


@pytest.fixture
def conversations(tmp_path: Path) -> Path:
    """Two synthetic LoCoMo-format conversations, imported (turns carry `session` and `created_at`)."""
    from helpers import write_conversations

    return write_conversations(tmp_path / "conversations")
