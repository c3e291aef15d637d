"""Fixtures for the host's tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Off a terminal a run prints a progress line every RECALL_KIT_PROGRESS_INTERVAL seconds; on a busy
# machine a test's run can last that long, and its stderr should hold only what the test checks
# (tests/test_progress.py sets its own interval).
os.environ.setdefault("RECALL_KIT_PROGRESS_INTERVAL", "600")

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
