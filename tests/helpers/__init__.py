"""What several test modules share: running the real CLI, and its one-line errors.

The push-path commands (`select`, `hook`, `functions`, `diff`) run through the core-only
install when SELECTOR_CORE_PYTHON names its interpreter (CI makes one: `pip install -e .`
without extras), so an import of pandas, scikit-learn or anything else of an extra on
the push path fails the tests that exercise it.  Every other command runs here.

Beside it, what a few test modules share, so that no test module imports another
(tests/test_architecture.py checks it): the JSON Schema of select's document (schema), a
scripted history of one program under tests/programs collected through the CLI
(scripted_history), the repositories `selector init` and `doctor` run on (onboarding), and
two small C programs with their configurations (loop_program, stack_alignment).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CORE_COMMANDS = frozenset({"select", "hook", "functions", "diff"})
PROGRAMS = Path(__file__).parent.parent / "programs"  # C and C++ sources the static-analysis tests compile


def core_python() -> str | None:
    return os.environ.get("SELECTOR_CORE_PYTHON") or None


def selector_command(*arguments: str) -> list[str]:
    """`python -m perf_selector ARGUMENTS`, through the core install for the push-path commands."""
    # --run-benchmarks needs the collect extra: those runs are the full install's
    core = arguments and arguments[0] in CORE_COMMANDS and "--run-benchmarks" not in arguments
    python = core_python() if core else None
    return [python or sys.executable, "-m", "perf_selector", *arguments]


def run_selector(*arguments: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(selector_command(*arguments), capture_output=True, text=True, cwd=cwd,
                          env=None if env is None else {**os.environ, **env})


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("selector: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def program_text(name: str) -> str:
    """The source of tests/programs/NAME."""
    return (PROGRAMS / name).read_text()


def perf_cannot_record(workdir: Path) -> str | None:
    """Why perf cannot sample this user's processes with cpu-clock here (not installed,
    perf_event_paranoid), or None when it can: perf tests skip with the reason."""
    try:
        probe = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", str(workdir / "probe.data"), "--", "true"],
                               capture_output=True, text=True, timeout=60)
    except OSError:
        return "perf is not installed"
    return None if probe.returncode == 0 else f"perf cannot record here: {probe.stderr.strip()[-200:]}"


def compile_c(source: str, output: Path, flags: str = "-O2", compiler: str = "gcc", extension: str = "c") -> Path:
    """Compile one source text with real gcc/g++."""
    path = output.with_suffix(f".{extension}")
    path.write_text(source)
    subprocess.run([compiler, *flags.split(), "-o", str(output), str(path)], check=True, capture_output=True)
    return output


def regions_between(tmp_path: Path, source: str, function: str, values: dict[str, list[str]]) -> list:
    """The changed regions of `function` between gcc's builds of `source` with each placeholder at
    its first value, then its second (the old build in tmp_path/side0, the new in side1)."""
    from perf_selector.collectors.block_diff import changed_regions
    from perf_selector.collectors.code_image import CodeImage

    images = []
    for side in (0, 1):
        text = source
        for placeholder, pair in values.items():
            text = text.replace(placeholder, pair[side])
        images.append(CodeImage.load(str(compile_c(text, tmp_path / f"side{side}"))))
    (old, new) = (image.function_parts([function], 0)[0] for image in images)
    return changed_regions(images[0], [old], images[1], [new])


def compile_cxx(sources: list[Path], output: Path, flags: str = "-O2") -> Path:
    """Compile and link several C++ translation units with real g++."""
    subprocess.run(["g++", *flags.split(), "-o", str(output), *map(str, sources)], check=True, capture_output=True)
    return output


def comparable_tables(store, same_slots: bool = True) -> dict:
    """A store's tables without what depends on when and how fast it was collected.  Without
    `same_slots` (builds in other worktree slots, so other directories in the debug
    information) the binaries' bytes may differ; their code (content_digest) may not."""
    volatile = ["collected_at", "build_seconds", "build_log_tail", "child_seconds", "benchmark_seconds", "profile_seconds",
                "cache_hits", "cache_misses"] + ([] if same_slots else ["binary_sha256"])
    return {
        "commits": store.read("commits").to_pandas().drop(columns=volatile).sort_values("sha").reset_index(drop=True),
        "functions": store.read("functions").to_pandas().sort_values(["commit", "name"]).reset_index(drop=True),
        "objects": store.read("objects").to_pandas().sort_values(["commit", "name"]).reset_index(drop=True),
    }


def gcc_config(benchmarks: str) -> str:
    """A selector.toml for a one-file C program, prog.c built into prog with gcc -O2 -g and
    profiled by callgrind, measured by `benchmarks` (its [[benchmark]] tables and any sections after)."""
    return ('[project]\nbinary = "prog"\n\n[build]\ncommand = "gcc -O2 -g -o prog prog.c"\ntimeout = 60\n\n'
            '[profile]\ntool = "callgrind"\n\n' + benchmarks.lstrip("\n"))


def new_project(root: Path, config: str) -> Path:
    """A fresh git repository at `root` (made) with `config` as its selector.toml, ignoring the
    program it builds (prog) and the store."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "selector.toml").write_text(config)
    (root / ".gitignore").write_text("prog\n.selector/\n")
    return root
