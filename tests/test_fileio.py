"""Atomic writes: whole or absent, and permissions as the user's umask says (private on request)."""

from __future__ import annotations

import os
import stat

from recall_kit.fileio import atomic_open, write_text_atomic


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_outputs_follow_the_umask_and_caches_stay_private(tmp_path):
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "result.json", "{}")
        with atomic_open(tmp_path / "cache.npy", "wb", private=True) as stream:
            stream.write(b"x")
        os.umask(0o077)
        write_text_atomic(tmp_path / "strict.json", "{}")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "result.json") == 0o644
    assert _mode(tmp_path / "cache.npy") == 0o600
    assert _mode(tmp_path / "strict.json") == 0o600
    assert sorted(os.listdir(tmp_path)) == ["cache.npy", "result.json", "strict.json"]


def test_ctrl_c_just_as_the_temporary_is_created_leaves_nothing(tmp_path, monkeypatch):
    """A real SIGINT delivered as `mkstemp` returns (the moment a rare Ctrl-C during `eval` left an
    empty `.out.run.*.tmp`): the interrupt still arrives, and no temporary is left."""
    import signal
    import tempfile

    import pytest

    from recall_kit.fileio import atomic_batch

    real = tempfile.mkstemp

    def interrupted(*args, **kwargs):
        made = real(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)  # Python runs the handler at its next instruction
        return made

    monkeypatch.setattr(tempfile, "mkstemp", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(tmp_path / "out.json", "{}")
    with pytest.raises(KeyboardInterrupt), atomic_batch():
        write_text_atomic(tmp_path / "out.run", "q Q0 d 1 1 r\n")
    assert os.listdir(tmp_path) == []
