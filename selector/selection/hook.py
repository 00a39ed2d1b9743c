"""git's pre-push hook: `selector hook install` / `uninstall`, and what the hook runs.

The installed hook is a small shell script.  An existing pre-push hook is kept: it
is moved to ``pre-push.before-selector`` and run first, its verdict respected; the
uninstall puts it back.  The selector part is advisory: it prints which benchmarks
the pushed commits need and why, and never blocks the push because of its own
failure, unless the hook was installed with ``--strict``.

A pushed commit that is what the working tree built is selected with that build
(selector.working_tree_build); another is built in a clean worktree, and when that
build fails the advice is a hook user's: build it yourself, or skip the hook.
"""

from __future__ import annotations

import shlex
import stat
import sys
from pathlib import Path

from perf_selector.collectors.builds import describe_failure
from perf_selector.collectors.errors import UserError

MARKER = "# installed by perf-selector"
KEPT = "pre-push.before-selector"
ZERO = "0" * 40


def hook_script(strict: bool, run_benchmarks: bool, store: str | None, config: str | None = None) -> str:
    options = " ".join(filter(None, ["--strict" if strict else "", "--run-benchmarks" if run_benchmarks else "",
                                     f"--store {shlex.quote(store)}" if store else "",
                                     f"--config {shlex.quote(config)}" if config else ""]))
    python = shlex.quote(sys.executable)
    return f"""#!/bin/sh
{MARKER}
# Chains to the hook that was here before (if any), then asks perf-selector which
# benchmarks the pushed commits need. Remove with: selector hook uninstall
input=$(cat)
here=$(dirname "$0")
if [ -x "$here/{KEPT}" ]; then
    printf '%s\\n' "$input" | "$here/{KEPT}" "$@" || exit $?
fi
printf '%s\\n' "$input" | {python} -m perf_selector hook run {options} -- "$@"
"""


def install(repository, strict: bool = False, run_benchmarks: bool = False, store: str | None = None,
            config: str | None = None) -> tuple[Path, bool]:
    """Write the hook; returns its path and whether an existing hook was kept (chained).  `config`:
    a selector.toml kept outside the repository, recorded (absolute) in the hook."""
    directory = repository.hooks_directory()
    directory.mkdir(parents=True, exist_ok=True)
    hook = directory / "pre-push"
    kept = False
    if hook.exists() and MARKER not in hook.read_text(errors="replace"):
        if (directory / KEPT).exists():
            raise UserError(f"{hook} is not ours and {directory / KEPT} exists already; merge them by hand")
        hook.rename(directory / KEPT)
        kept = True
    hook.write_text(hook_script(strict, run_benchmarks, store, str(Path(config).resolve()) if config else None))
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return hook, kept or (directory / KEPT).exists()


# The module a hook written before the one install namespace (perf_selector) runs: that
# hook fails every push with "No module named selector" until it is installed again.
OLD_MODULE = "selector"


def outdated_hook(repository) -> Path | None:
    """Our pre-push hook, when an older version wrote it to run a module this one no longer has."""
    hook = repository.hooks_directory() / "pre-push"
    if hook.exists() and MARKER in (text := hook.read_text(errors="replace")) and f"-m {OLD_MODULE} hook run" in text:
        return hook
    return None


def uninstall(repository) -> tuple[Path, bool]:
    """Remove our hook and put back the one it chained to; returns (hook path, restored)."""
    directory = repository.hooks_directory()
    hook = directory / "pre-push"
    if not hook.exists() or MARKER not in hook.read_text(errors="replace"):
        raise UserError(f"{hook} was not installed by selector; nothing to uninstall")
    hook.unlink()
    if (directory / KEPT).exists():
        (directory / KEPT).rename(hook)
        return hook, True
    return hook, False


def pushed_commits(lines: list[str], environment: dict[str, str]) -> list[str]:
    """The local commits being pushed, from git's pre-push input or pre-commit's environment."""
    if environment.get("PRE_COMMIT_TO_REF"):
        return [environment["PRE_COMMIT_TO_REF"]]
    commits = []
    for line in lines:
        parts = line.split()
        if len(parts) == 4 and parts[1] != ZERO:  # a deleted ref pushes nothing
            commits.append(parts[1])
    return commits


def build_failure_advice(sha: str, reason: str, command: str, log_tail: str) -> str:
    """What the hook says when the pushed commit did not build: a hook user cannot pass
    --binary, but can build it where the hook will take the build, or skip the check."""
    return (f"{describe_failure(sha, reason, command, log_tail)}\nso the hook selected no benchmarks for it. Check it "
            f"out, build it with no uncommitted changes and push again: the hook then uses your build. Or skip this "
            f"check with `git push --no-verify`.")
