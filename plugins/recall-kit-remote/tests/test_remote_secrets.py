"""No secret in any output (issue 37): a password in `http.url` or `mcp.url`, an `--api-key` in
`command.argv` or `mcp.command`, planted as a canary and looked for in every file written and in
stdout and stderr; what a program wrote to its stderr is named, not printed; a command line with
an unbalanced quote names its option."""

from __future__ import annotations

from pathlib import Path

from remote_helpers import SERVERS, dataset_with, free_port, mcp_command, run_cli
from test_command import PYTHON_PROGRAM

#: A password no output may hold.
CANARY = "Canary7pw"


def _no_canary(folder: Path, result) -> None:  # type: ignore[no-untyped-def]
    for path in folder.rglob("*"):
        assert CANARY not in path.name
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path
    assert CANARY not in result.stdout + result.stderr, result.stderr


def _errors(stderr: str) -> list[str]:
    """stderr's lines but the progress display's (a slow machine prints one every few seconds)."""
    return [line for line in stderr.splitlines() if not line.startswith("recall-kit: ")]


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://reader:{CANARY}@", 1) + f"?api_key={CANARY}"


def test_a_password_in_the_http_url_is_in_no_output(tmp_path: Path, sample_folder: Path) -> None:
    url = _with_password(SERVERS["http_sample"])
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "http", "-o", f"http.url={url}",
                     "--json", str(tmp_path / "r.json"), "--run", str(tmp_path / "r.run"), "--report", "json")
    assert result.returncode == 0, result.stderr
    assert "http://reader:***@127.0.0.1" in (tmp_path / "r.json").read_text()
    html = run_cli("compare", str(tmp_path / "r.json"), str(tmp_path / "r.json"), "--report", "html",
                   "--output", str(tmp_path / "c.html"))
    assert html.returncode == 0, html.stderr
    _no_canary(tmp_path, result)
    _no_canary(tmp_path, html)


def test_an_unreachable_url_with_a_password_is_named_masked(tmp_path: Path, sample_folder: Path) -> None:
    for retriever in ("http", "mcp"):
        url = _with_password(f"http://127.0.0.1:{free_port()}/{retriever}")
        result = run_cli("eval", "--dataset", str(sample_folder), "-r", retriever, "-o", f"{retriever}.url={url}",
                         "--json", str(tmp_path / "never.json"))
        assert result.returncode == 2
        assert len(_errors(result.stderr)) == 1 and "reader:***@127.0.0.1" in result.stderr, result.stderr
        _no_canary(tmp_path, result)


def test_an_api_key_on_a_command_line_is_in_no_output(tmp_path: Path, sample_folder: Path) -> None:
    argv = f"{PYTHON_PROGRAM} --api-key {CANARY}"
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "command", "-o", f"command.argv={argv}",
                     "-o", "command.send_corpus=true", "--json", str(out / "r.json"), "--report", "json")
    assert result.returncode == 0, result.stderr
    assert "--api-key ***" in (out / "r.json").read_text()
    _no_canary(out, result)
    for retriever, option in (("command", f"command.argv=no-such-program --api-key {CANARY}"),
                              ("mcp", f"mcp.command=no-such-mcp-server --token={CANARY}"),
                              ("mcp", f"mcp.command={mcp_command('--no-such-flag', '--password', CANARY)}")):
        failed = run_cli("eval", "--dataset", str(sample_folder), "-r", retriever, "-o", option,
                         "--json", str(out / "never.json"))
        assert failed.returncode == 2 and len(_errors(failed.stderr)) == 1, failed.stderr
        _no_canary(out, failed)


def test_what_a_dying_program_wrote_to_stderr_is_named_not_printed(tmp_path: Path, sample_folder: Path) -> None:
    folder = dataset_with(tmp_path, sample_folder, {2: "crash"})
    query = (folder / "queries.jsonl").read_text().splitlines()[2]
    args = ("eval", "--dataset", str(folder), "-r", "command", "-o", f"command.argv={PYTHON_PROGRAM}",
            "-o", "command.send_corpus=true", "--json", str(tmp_path / "crash.json"))
    result = run_cli(*args)
    assert result.returncode == 2 and len(_errors(result.stderr)) == 1
    assert "exited with status 3" in result.stderr and "run 'recall-kit --debug eval ...' to show its last line" in result.stderr
    assert "fatal" not in result.stderr and "crash" not in result.stderr, result.stderr  # its words, the query's
    assert query  # the program's stderr line quotes the query: shown only when asked for
    debug = run_cli(*args, env={"RECALL_KIT_DEBUG": "1"})
    assert debug.returncode == 2 and "last stderr line: fatal: the index is corrupt" in debug.stderr


def test_an_unbalanced_quote_names_the_option(sample_folder: Path) -> None:
    for retriever, option in (("command", "command.argv"), ("mcp", "mcp.command")):
        result = run_cli("eval", "--dataset", str(sample_folder), "-r", retriever, "-o", f'{option}=python "x.py')
        assert result.returncode == 2
        assert len(_errors(result.stderr)) == 1 and f"{option} cannot be split as a shell would" in result.stderr
