"""Fixtures for recall-kit-fusion's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import recall_kit_fusion

from recall_kit.testing import registered_plugin


@pytest.fixture
def fusion_plugin():
    """recall_kit_fusion registered for one test."""
    with registered_plugin(recall_kit_fusion, name="recall-kit-fusion") as plugin:
        yield plugin
