"""The run's one progress display: stages replace each other; a plugin's bar is a stage of it."""

from __future__ import annotations

from recall_kit import progress


def test_stages_and_a_nested_bar_share_one_line():
    with progress.progress_display(show=True):
        display = progress._current
        assert display is not None
        advance = progress.stage("fts5: searching 120 queries", total=120)
        advance(20)
        assert display.snapshot() == ("fts5: searching 120 queries", 120, 20)
        with progress.progress_bar(500, "dense: embedding 500 memories") as embed:
            embed(100)
            assert display.snapshot() == ("dense: embedding 500 memories", 500, 100)
        # the stage before the bar comes back as it was
        assert display.snapshot() == ("fts5: searching 120 queries", 120, 20)
        with progress.progress_display(show=True):  # nested: the same display
            assert progress._current is display
    assert progress._current is None


def test_without_a_display_stage_does_nothing_and_no_bar_is_drawn(capsys):
    progress.stage("dense: loading the model")(5)
    with progress.progress_bar(10, "x", show=False) as advance:
        advance(3)
    assert capsys.readouterr().err == ""


def test_steps_say_where_the_run_is_and_estimate_the_time_left(monkeypatch):
    with progress.progress_display(show=True):
        display = progress._current
        assert display is not None
        with progress.steps(4, "leg search") as begin_search, progress.steps(5, "scope") as begin_scope:
            begin_search("dense (dense.max_seq_length=128)")
            begin_search("dense (as given)")  # the second of 4
            begin_scope("", 3)  # its third scope of 5
            progress.stage("dense: embedding 500 memories", total=500)(100)
            # 1 of 4 searches done, 2 of the second's 5 scopes, and 100 of the third scope's 500
            # memories: 1/4 + 1/4 * 2/5 + 1/4 * 1/5 * 100/500 = 0.36
            assert abs(display.share_done() - 0.36) < 1e-12
            monkeypatch.setattr(display, "started", progress.time.monotonic() - 70.0)
            line = display.line()
            assert line.startswith("recall-kit: leg search 2 of 4: dense (as given) > scope 3 of 5 > "
                                   "dense: embedding 500 memories 100/500 (")
            # 70 s for 36%: 124 s left
            assert line.endswith("(1m10s elapsed, about 2m04s left)")
        assert display.levels == []


def test_no_about_0s_left_while_work_remains(monkeypatch):
    # "about 0s left" at 0/337: the pace of the steps before said the run was over.
    with progress.progress_display(show=True):
        display = progress._current
        assert display is not None
        with progress.steps(2, "leg search") as begin:
            begin("fts5")
            begin("dense")
            monkeypatch.setattr(display, "started", progress.time.monotonic() - 30.0)
            display.reached = (0.5, display.started + 1.0)  # half the work was done after 1 s
            progress.stage("dense: searching 337 queries", total=337)
            assert display.line().endswith("(30s elapsed)")


def test_without_a_terminal_a_plain_line_every_interval(tmp_path):
    """A real process whose stderr is a file: lines appear every interval, say where the run is
    and count; work shorter than one interval prints nothing. About 3 s of work against a 0.5 s
    interval: on a busy machine the work stretches, so the time left stays above the 1 s below
    which no estimate is shown, and the number of lines is bounded by the time the run took."""
    import os
    import subprocess
    import sys
    import time

    script = (
        "import time\n"
        "from recall_kit import progress\n"
        "with progress.progress_display():\n"
        "    with progress.steps(2, 'leg search') as begin:\n"
        "        for name in ('fts5', 'dense'):\n"
        "            begin(name)\n"
        "            with progress.progress_bar(10, name + ': embedding 10 memories') as advance:\n"
        "                for _ in range(10):\n"
        "                    time.sleep(0.15)\n"
        "                    advance(1)\n"
        "with progress.progress_display():\n"
        "    progress.stage('quick')\n"
    )
    log = tmp_path / "stderr.txt"
    started = time.monotonic()
    with log.open("w") as stderr:
        subprocess.run([sys.executable, "-c", script], stderr=stderr, check=True, timeout=60,
                       env={**os.environ, "RECALL_KIT_PROGRESS_INTERVAL": "0.5"})
    took = time.monotonic() - started
    lines = log.read_text().splitlines()
    assert 2 <= len(lines) <= took / 0.5 + 1, (took, lines)
    assert all(line.startswith("recall-kit: leg search ") for line in lines), lines
    assert any("leg search 2 of 2: dense > dense: embedding 10 memories " in line for line in lines), lines
    assert any("about" in line and "left)" in line for line in lines), lines
    assert not any("quick" in line for line in lines)


def test_a_legs_description_names_its_context_expansion():
    # A sweep over bm25.context.window showed "bm25 (k1=...)" for every variant alike.
    from recall_kit.measure.run.distribute import describe_leg
    from recall_kit.measure.systems.context import ContextOptions
    from recall_kit.measure.systems.system import Leg

    leg = Leg("bm25", lambda: None, None, 1.0, "p", context=ContextOptions(window=2, weight=3))
    assert describe_leg(leg) == "bm25 (context.window=2, context.weight=3)"
    assert describe_leg(Leg("bm25", lambda: None, None, 1.0, "p", context=ContextOptions())) == "bm25"
