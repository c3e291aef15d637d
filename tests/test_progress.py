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
