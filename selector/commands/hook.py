"""`selector hook`: the git pre-push hook, installed, removed and run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from perf_selector.selector.commands.common import DEFAULT_STORE, on_the_push_path, project_config, repo_option, store_option
from perf_selector.selector.extras import require
from perf_selector.selector.tables import stderr, stdout


@click.group("hook")
def hook_group() -> None:
    """git pre-push hook: install, uninstall, and what it runs."""



@hook_group.command("install")
@repo_option("The git repository whose hook it is.")
@click.option("--strict", is_flag=True, help="Let the hook block a push when selector itself fails or refuses the model bundle (tampered, damaged).")
@click.option("--run-benchmarks", is_flag=True, help="Also run the selected benchmarks and report changes against the ancestor.")
@store_option(f"Store the hook reads [default: {DEFAULT_STORE}/ in the repository].")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="The selector.toml the hook reads, when it is kept outside the repository (recorded in the hook).")
def hook_install(repository: Path, strict: bool, run_benchmarks: bool, store_location: str | None,
                 config_path: Path | None) -> None:
    """Install the pre-push hook (an existing hook is kept and runs first), and have git
    ignore the store (.gitignore).  On each push it decides for the commit each pushed branch
    points to, against that commit's closest collected ancestor: the changes of every commit
    pushed with it are in that comparison (the output says how many commits back it is)."""
    if run_benchmarks:
        require("the hook's --run-benchmarks", "collect")
    if config_path is not None:  # read it now: a hook that fails on every push is worse than no hook
        from perf_selector.selector.config import load_config

        load_config(config_path)
    from perf_selector.collectors.repository import Repository
    from perf_selector.selector.onboarding.gitignore import ignore_store
    from perf_selector.selector.selection.hook import install

    opened = Repository.open(repository)
    hook, kept = install(opened, strict, run_benchmarks, store_location, str(config_path) if config_path else None)
    stdout.print(f"installed {hook}" + (" (the previous hook runs first)" if kept else ""))
    stdout.print(ignore_store(opened, store_location or opened.top / DEFAULT_STORE), markup=False, highlight=False)



@hook_group.command("uninstall")
@repo_option("The git repository whose hook it is.")
def hook_uninstall(repository: Path) -> None:
    """Remove the pre-push hook and restore the one it replaced."""
    from perf_selector.collectors.repository import Repository
    from perf_selector.selector.selection.hook import uninstall

    hook, restored = uninstall(Repository.open(repository))
    stdout.print(f"removed {hook}" + ("; the previous hook is back" if restored else ""))



@hook_group.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--strict", is_flag=True)
@click.option("--run-benchmarks", is_flag=True)
@store_option()
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("git_arguments", nargs=-1, type=click.UNPROCESSED)
def hook_run(strict: bool, run_benchmarks: bool, store_location: str | None, config_path: Path | None, git_arguments) -> None:
    """What the installed hook (or pre-commit at the pre-push stage) runs; reads git's
    pre-push lines on stdin. Advisory: exits 0 unless --strict and selector failed."""
    from perf_selector.selector.selection.hook import pushed_commits

    on_the_push_path()
    lines = [] if sys.stdin.isatty() else sys.stdin.read().splitlines()
    commits = pushed_commits(lines, dict(os.environ))
    failed = False
    for commit in commits:
        try:
            failed |= _hook_select(commit, store_location, strict, run_benchmarks, config_path) == 3
        except Exception as error:  # noqa: BLE001 - advisory: report, never block unless strict
            click.echo(f"selector: {_hook_advice(error)}", err=True)
            failed = True
    sys.exit(1 if strict and failed else 0)



def _hook_select(commit: str, store_location: str | None, strict: bool, run_benchmarks: bool,
                 config_path: Path | None = None) -> int:
    """Select for one pushed commit, with the working tree's build when it is the commit's; one
    that cannot be analysed (stripped, say) is set aside for a build in a clean worktree."""
    from perf_selector.collectors.errors import BinaryError
    from perf_selector.selector.commands.select import select_and_print

    binary = _working_tree_binary(commit, config_path)
    try:
        return select_and_print(Path("."), config_path, store_location, commit, binary, None, None, strict, "text",
                                run_benchmarks, working_tree=False)  # it asked already (and said so)
    except BinaryError as error:
        if binary is None:
            raise
        stderr.print(f"note: not using the working tree's build: {error}", markup=False, highlight=False)
    return select_and_print(Path("."), config_path, store_location, commit, None, None, None, strict, "text",
                            run_benchmarks, working_tree=False)



def _working_tree_binary(revision: str, config_path: Path | None = None) -> Path | None:
    """The developer's build of `revision` when the working tree holds it (saying so, or why not)."""
    from perf_selector.collectors.repository import Repository
    from perf_selector.selector.selection.working_tree_build import working_tree_build

    repository = Repository.open(Path("."))
    sha = repository.resolve(revision)
    if sha is None:
        return None  # select says what is wrong with it
    found = working_tree_build(repository, sha, project_config(repository.top, config_path).project.binary)
    stderr.print(f"note: {found.note}", markup=False, highlight=False)
    return found.binary



def _hook_advice(error: Exception) -> str:
    """The hook's message for a failure: a failed build gets advice a hook user can act on."""
    from perf_selector.selector.selection.hook import build_failure_advice
    from perf_selector.selector.selection.selection import BuildFailed

    if isinstance(error, BuildFailed):
        return build_failure_advice(error.sha, error.reason, error.command, error.log_tail)
    return str(error)
