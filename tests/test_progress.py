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


class _Clock:
    """The display's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_steps_say_where_the_run_is_and_estimate_the_time_left(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress, "_clock", clock)
    with progress.progress_display(show=True):
        display = progress._current
        assert display is not None
        with progress.steps(4, "leg search") as begin_search, progress.steps(5, "scope") as begin_scope:
            begin_search("dense (max_seq_length=128)")
            clock.now += 70.0
            begin_search("dense")  # the second of 4
            clock.now += 20.0
            begin_scope("", 3)  # its third scope of 5
            progress.stage("dense: embedding 500 memories", total=500)(100)
            # 1 of 4 searches done, 2 of the second's 5 scopes, and 100 of the third scope's 500
            # memories: 1/4 + 1/4 * 2/5 + 1/4 * 1/5 * 100/500 = 0.36
            assert abs(display.share_done() - 0.36) < 1e-12
            line = display.line()
            assert line.startswith("recall-kit: leg search 2 of 4: dense > scope 3 of 5 > "
                                   "dense: embedding 500 memories 100/500 (")
            # two samples: 25% in 70 s, then 10% in 20 s (the third scope begun; the bar's 1% at
            # that same moment waits for the next sample); smoothed (the newest weighs 0.3), the
            # rate is (0.3 * 0.10 + 0.7 * 0.25) / (0.3 * 20 + 0.7 * 70) = 0.205 / 55 a second,
            # and the 65% left take 0.65 * 55 / 0.205 = 174 s
            assert line.endswith("(1m30s elapsed, about 2m54s left)")
        assert display.levels == []


def _estimates(display, clock, seconds_per_memory, memories, legs=2):  # type: ignore[no-untyped-def]
    """Seconds left as the display says them through a run of `legs` leg searches, each a bar of
    `memories` memories at one pace; after each bar the stage before it comes back, and the share
    done falls back to the step's start until the next step begins."""
    import re

    seen = []
    with progress.steps(legs, "leg search") as begin:
        for leg in range(legs):
            begin(f"leg{leg}")
            with progress.progress_bar(memories, "embedding") as advance:
                for _ in range(memories):
                    clock.now += seconds_per_memory
                    advance(1)
                    seen.append(display.timing())
            seen.append(display.timing())  # the bar gone: the share falls back to the step's start
    left = []
    for text in seen:
        found = re.search(r"about (?:(\d+)m)?(\d+)s left", text)
        left.append(int(found.group(1) or 0) * 60 + int(found.group(2)) if found else None)
    return left


def test_the_time_left_does_not_grow_while_the_rate_holds(monkeypatch):
    # make demo: 10 s -> 21 s -> 24 s left at one steady pace: a bar's end dropped the share done
    # to its step's start, and the pace since the run began was applied to that smaller share.
    clock = _Clock()
    monkeypatch.setattr(progress, "_clock", clock)
    with progress.progress_display(show=True):
        display = progress._current
        left = _estimates(display, clock, seconds_per_memory=1.0, memories=20)
    shown = [value for value in left if value is not None]
    assert len(shown) == 42 and shown[-1] == 0
    assert all(later <= earlier for earlier, later in zip(shown, shown[1:])), str(left)


def test_the_time_left_follows_a_change_of_pace_within_a_few_samples(monkeypatch):
    # The first leg searches at 0.1 s a memory, the second at 2 s: the estimate moves to the new
    # pace (tqdm's smoothing), where the pace since the start would still say a fraction of it.
    clock = _Clock()
    monkeypatch.setattr(progress, "_clock", clock)
    with progress.progress_display(show=True):
        display = progress._current
        with progress.steps(2, "leg search") as begin:
            begin("fast")
            with progress.progress_bar(50, "embedding") as advance:
                for _ in range(50):
                    clock.now += 0.1
                    advance(1)
            begin("slow")
            with progress.progress_bar(50, "embedding") as advance:
                for _ in range(20):
                    clock.now += 2.0
                    advance(1)
                    display.timing()
                # 30 memories left at 2 s each: 60 s, give or take the fast leg's fading weight
                # (0.7 ** 20 of it); the pace since the start would say 30 * 45 s / 70 = 19 s
                assert display.timing().endswith(("about 58s left", "about 59s left", "about 1m00s left"))


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
            display.pace.sample(0.5, 1.0)
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
