"""A build that fails says why, in every command that builds: the command, the exit status
and the last lines of the build's output, where the compiler's error is (real gcc and make)."""

from __future__ import annotations

import re
from pathlib import Path

from perf_selector.collectors.builds import FAILURE_LINES, describe_failure
from perf_selector.selector.onboarding.sample_history import commit_all, make_sample_history
from tests.helpers import run_selector

ERROR = re.compile(r"src/table\.c:\d+:\d+: error: .no_such_variable. undeclared")  # gcc's line (quotes by locale)


def _broken_project(root: Path) -> str:
    """The sample project, then a commit whose src/table.c does not compile."""
    make_sample_history(root, steps=())
    table = root / "src" / "table.c"
    table.write_text(table.read_text() + "\nint broken(void)\n{\n    return no_such_variable;\n}\n")
    return commit_all(root, "Broken: a variable that is not declared")


def _said_once(output: str, sha: str) -> None:
    assert len(ERROR.findall(output)) == 1, output
    assert f"the build of {sha[:12]} failed (exit status 2)" in output, output
    assert "command: make -s prog" in output, output
    assert "Traceback" not in output, output


def test_calibrate_collect_and_select_say_the_command_the_status_and_the_compiler_s_error(tmp_path):
    root = tmp_path / "project"
    broken = _broken_project(root)

    calibrated = run_selector("calibrate", "--repo", str(root), "--rounds", "1")
    assert calibrated.returncode == 2, calibrated.stderr
    _said_once(calibrated.stderr, broken)
    assert "name a commit that builds" in calibrated.stderr

    collected = run_selector("collect", "--repo", str(root), "-n", "1")
    _said_once(collected.stdout + collected.stderr, broken)  # calibration first, then the collection: said once
    assert "calibration failed: the build of" in collected.stderr

    selected = run_selector("select", "--repo", str(root))
    assert selected.returncode == 2, selected.stderr
    _said_once(selected.stderr, broken)
    assert "pass --binary" in selected.stderr


def test_a_failure_shows_the_last_lines_of_the_output_indented_and_trailing_blank_lines_dropped():
    output = "\n".join(f"line {n}" for n in range(100)) + "\n\n"
    said = describe_failure("a" * 40, "exit status 1", "make", output).splitlines()
    assert said[:3] == ["the build of aaaaaaaaaaaa failed (exit status 1)", "  command: make (in a clean checkout of aaaaaaaaaaaa)",
                        f"  the last {FAILURE_LINES} lines of its output:"]
    assert said[3:] == [f"    line {n}" for n in range(100 - FAILURE_LINES, 100)]
    assert describe_failure("a" * 40, "timed out after 9 s", "make", "").endswith("it printed nothing")
