"""`selector doctor` refuses what cannot work, naming the fix: a placeholder `init` left
(`binary = "CHANGE-ME"`), a make command run where there is no Makefile, and a program that
the project's release configuration strips (`-s` appended after $(LDFLAGS)), whose fix is
the make variable that carries it; and a dry run's doubt gives way to the store's builds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import run_selector

BENCHMARK = '[[benchmark]]\nname = "run"\ncommand = "{binary}"\nmetric = "instructions"\n[profile]\ntool = "callgrind"\n'
# laid out as an interpreter's release build: makefiles under projects/make/, the program stripped at link time
STRIPPING_MAKEFILE = """CFLAGS ?= -O2 -g
ALL_LDFLAGS = $(LDFLAGS) -s
../../bin/prog: ../../src/prog.c
\tmkdir -p ../../bin && $(CC) $(CFLAGS) -o $@ $< $(ALL_LDFLAGS)
"""


def repository(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first"], cwd=root, check=True)
    return root


def doctor(root: Path, *arguments: str) -> tuple[int, dict]:
    result = run_selector("doctor", "--repo", str(root), *arguments, "--format", "json")
    checks = {row["check"]: row for row in json.loads(result.stdout)["checks"]}
    return result.returncode, checks


def test_doctor_fails_on_the_placeholder_init_writes(tmp_path):
    root = repository(tmp_path / "p", {"selector.toml": f'[project]\nbinary = "CHANGE-ME"\n[build]\ncommand = "make"\n{BENCHMARK}',
                                       "Makefile": "all:\n\ttrue\n"})
    status, checks = doctor(root)
    assert status != 0
    assert checks["placeholders"]["status"].lower() == "fail" and "CHANGE-ME" in checks["placeholders"]["found"]
    assert checks["placeholders"]["fix"]


def test_doctor_fails_on_make_where_no_makefile_is_and_names_where_they_are(tmp_path):
    root = repository(tmp_path / "p", {"selector.toml": f'[project]\nbinary = "bin/prog"\n[build]\ncommand = "make -j2"\n{BENCHMARK}',
                                       "projects/make/Makefile": STRIPPING_MAKEFILE, "src/prog.c": "int main(void){return 0;}\n"})
    status, checks = doctor(root)
    assert status != 0
    target = checks["build target"]
    assert target["status"].lower() == "fail" and "no Makefile" in target["found"] and target["fix"] == "in [build] command: make -C projects/make"


def test_a_stripping_release_build_fails_doctor_with_the_variable_that_carries_minus_s(tmp_path):
    root = repository(tmp_path / "p", {
        "selector.toml": f'[project]\nbinary = "bin/prog"\n[build]\ncommand = "make -C projects/make ../../bin/prog"\n{BENCHMARK}',
        "projects/make/Makefile": STRIPPING_MAKEFILE, "src/prog.c": "int main(void){return 0;}\n"})
    subprocess.run(["make", "-s", "-C", "projects/make", "../../bin/prog"], cwd=root, check=True, capture_output=True)
    status, checks = doctor(root, "--binary", str(root / "bin" / "prog"))
    assert status != 0
    symbols = checks["symbols"]
    assert symbols["status"].lower() == "fail" and "stripped" in symbols["found"]
    assert "ALL_LDFLAGS='$(LDFLAGS)'" in symbols["fix"] and "projects/make/Makefile" in symbols["fix"]
    # the fix, applied, gives a program with its symbols
    (root / "bin" / "prog").unlink()
    subprocess.run(["make", "-s", "-C", "projects/make", "../../bin/prog", "ALL_LDFLAGS=$(LDFLAGS)"], cwd=root, check=True,
                   capture_output=True)
    _, checks = doctor(root, "--binary", str(root / "bin" / "prog"))
    assert checks["symbols"]["status"].lower() == "ok", checks["symbols"]


def test_init_writes_the_override_of_a_stripping_makefile():
    from perf_selector.selector.onboarding.build_recipes import strip_overrides

    assert strip_overrides(STRIPPING_MAKEFILE) == [
        ("ALL_LDFLAGS='$(LDFLAGS)'", "ALL_LDFLAGS without -s (the Makefile strips the program, whose functions then have no names)")]
    assert strip_overrides("LDFLAGS = -Wl,--strip-all -lm\n")[0][0] == "LDFLAGS=-lm"
    assert strip_overrides("CFLAGS = -O2 -save-temps\n") == []  # -s only as a word of its own
