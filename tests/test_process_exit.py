"""How the `selector` program ends: once a command has ended, `main` removes its temporary
copies, flushes the output and exits without tearing the interpreter down.  Tearing it down
after a command that read the store aborted now and then in Arrow's C++ teardown ("terminate
called without an active exception", exit 134 after the whole result was printed: 3 of 40
runs of `collect --failures` on a loaded machine before, none of 60 after).  An abort that
rare cannot be waited for in a test; what is tested is that every command ends this way, with
its whole output and its own exit status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _program(tmp_path: Path, *arguments: str) -> tuple[subprocess.CompletedProcess, bool]:
    """Runs selector's `main` with `arguments` in a fresh interpreter that marks its own teardown
    (an atexit function): (the finished process, whether the interpreter was torn down)."""
    marker = tmp_path / "torn-down"
    code = (f"import atexit, sys; atexit.register(lambda: open({str(marker)!r}, 'w').close()); "
            f"sys.argv = ['selector', *{list(arguments)!r}]; "
            "from perf_selector.selector.cli import main; main()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    return result, marker.exists()


def test_a_command_that_succeeds_exits_with_its_whole_output_and_no_teardown(tmp_path):
    result, torn_down = _program(tmp_path, "collect", "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: selector collect" in result.stdout and "--failures" in result.stdout
    assert result.stdout.rstrip().endswith("Show this message and exit.")  # the last line of the help: all of it flushed
    assert not torn_down


def test_a_command_that_fails_keeps_its_exit_status_and_says_why_on_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result, torn_down = _program(tmp_path, "collect", "--failures", "--repo", str(tmp_path / "empty"))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("selector: error: ")
    assert not torn_down
