"""Registration, option coercion through the host, and the installed-plugin smoke test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from recall_kit_fusion.convex import ConvexFusion
from recall_kit_fusion.exact_bonus import ExactBonus
from recall_kit_fusion.importance import ImportanceBlend
from recall_kit_fusion.rrf import ReciprocalRankFusion

from recall_kit.plugin import OptionError, build_options
from recall_kit.testing import registries

ROOT = Path(__file__).resolve().parents[3]


def test_registers_every_strategy(fusion_plugin):
    entries = registries()["fusions"].all()
    expected = {"rrf": ReciprocalRankFusion, "convex": ConvexFusion, "exact-bonus": ExactBonus,
                "importance": ImportanceBlend}
    for name, cls in expected.items():
        assert entries[name].obj is cls
        assert entries[name].plugin == "recall-kit-fusion"
    assert ReciprocalRankFusion.combines_legs and ConvexFusion.combines_legs
    assert not ExactBonus.combines_legs and not ImportanceBlend.combines_legs
    for name in ("wsum", "combsum", "combmnz", "combmax", "combmin", "combanz", "borda", "isr", "log-isr"):
        assert entries[name].obj.combines_legs and entries[name].plugin == "recall-kit-fusion"


def test_options_from_command_line_strings():
    assert build_options("fusion 'rrf'", ReciprocalRankFusion.Options, {"k": "10", "depth": "50"}) == (
        ReciprocalRankFusion.Options(k=10, depth=50)
    )
    assert build_options("fusion 'convex'", ConvexFusion.Options, {"norm": "zscore"}).norm == "zscore"
    assert build_options("fusion 'exact-bonus'", ExactBonus.Options, {"bonus": "none"}).bonus is None
    assert build_options("fusion 'exact-bonus'", ExactBonus.Options, {"bonus": "2.5"}).bonus == 2.5
    with pytest.raises(OptionError, match="expected one of minmax, zscore, max, rank"):
        build_options("fusion 'convex'", ConvexFusion.Options, {"norm": "l2"})
    with pytest.raises(OptionError, match="k must be >= 0"):
        build_options("fusion 'rrf'", ReciprocalRankFusion.Options, {"k": "-1"})
    with pytest.raises(OptionError, match="Unknown option 'kk'"):
        build_options("fusion 'rrf'", ReciprocalRankFusion.Options, {"kk": "1"})


def test_recall_kit_plugins_lists_it_once_installed():
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-fusion"}
    completed = subprocess.run([sys.executable, "-m", "recall_kit", "plugins", "--json"], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    plugins = {info["name"]: info for info in json.loads(completed.stdout)["plugins"]}
    assert sorted(plugins["recall-kit-fusion"]["registers"]["fusions"]) == [
        "borda", "combanz", "combmax", "combmin", "combmnz", "combsum", "convex", "exact-bonus", "importance", "isr",
        "log-isr", "rescore", "rrf", "wsum"]
