"""The submodules of a commit, checked out in its build worktree from the developer's clone.

A tree that vendors code as submodules (LevelDB's third_party/benchmark and googletest)
builds for its developers after ``git submodule update --init``, which left each
submodule's repository in ``.git/modules/<name>`` (or, for a submodule cloned by hand or
by an older git, in ``<path>/.git``).  A build worktree gets the commit each gitlink
records, from those local objects only: nothing is fetched, so a collection never waits
on the network nor changes with what a remote holds today.  A submodule that cannot be
had that way is left out, with one line saying which and why; the build goes on (it may
find the library elsewhere, or fail and say so itself).

Each submodule is a ``git clone --shared`` of the local repository into its path: the
developer's repository is only read (a linked worktree of it would write its bookkeeping
there), and removing the build worktree removes the clone.  A slot's next build starts
from a fresh worktree, so a gitlink that moved, or a submodule the next commit does not
have, never leaves a stale checkout behind.  Nested submodules are checked out the same
way from the repositories nested in the submodule's (``.git/modules/<a>/modules/<b>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perf_selector.collectors.repository import GitCommandFailed, Repository, submodule_paths


@dataclass(frozen=True)
class Submodule:
    name: str  # as .gitmodules names it: where git keeps its repository (.git/modules/<name>)
    path: str  # in the tree
    commit: str  # the gitlink's


@dataclass
class SubmoduleCheckouts:
    """What checking out a commit's submodules did: the paths checked out (relative to the
    checkout, nested ones included) and one line for each submodule left out."""

    paths: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def check_out_submodules(source: Repository, sha: str, checkout: Path) -> SubmoduleCheckouts:
    """Check out the submodules of commit `sha` of `source` (the developer's repository) in
    `checkout`, a worktree of that commit, from their local repositories only."""
    done = SubmoduleCheckouts()
    _check_out_level(_git_dirs(source.git_dir), source.top, source, sha, checkout, "", done)
    return done


def _check_out_level(git_dirs: list[Path], developer_top: Path | None, repository: Repository, sha: str,
                     checkout: Path, prefix: str, done: SubmoduleCheckouts) -> None:
    """The submodules of one repository's commit (the top level, or a submodule's), then theirs."""
    for submodule in submodules_of(repository, sha, checkout):
        shown = prefix + submodule.path
        local = local_repository(git_dirs, developer_top, submodule)
        reason = _why_not(local, submodule, developer_top) or _check_out(local, submodule, checkout)
        if reason is not None:
            done.missing.append(f"submodule {shown} not checked out: {reason}; the build goes on without it")
            continue
        done.paths.append(shown)
        nested_top = developer_top / submodule.path if developer_top is not None else None
        _check_out_level([local], nested_top, Repository.at_git_dir(local), submodule.commit,
                         checkout / submodule.path, f"{shown}/", done)


def submodules_of(repository: Repository, sha: str, checkout: Path) -> list[Submodule]:
    """The submodules commit `sha` declares in its .gitmodules (read from `checkout`, its
    worktree) that its tree has a gitlink for.  A tree without .gitmodules costs no git command."""
    declared = {name: path.strip("/") for name, path in submodule_paths(checkout / ".gitmodules").items()}
    if not declared:
        return []
    commits = repository.gitlinks(sha, sorted(set(declared.values())))
    return [Submodule(name, path, commits[path]) for name, path in sorted(declared.items()) if path in commits]


def local_repository(git_dirs: list[Path], developer_top: Path | None, submodule: Submodule) -> Path | None:
    """The submodule's repository in the developer's clone: where `git submodule update`
    keeps it (``modules/<name>`` in the git directory), else a checkout of it whose .git
    is a directory (or a file naming one); None when there is none."""
    if not _is_safe_name(submodule.name):
        return None
    candidates = [git_dir / "modules" / submodule.name for git_dir in git_dirs]
    if developer_top is not None:
        candidates.append(_git_dir_at(developer_top / submodule.path))
    return next((candidate for candidate in candidates if candidate is not None and _is_git_dir(candidate)), None)


def _why_not(local: Path | None, submodule: Submodule, developer_top: Path | None) -> str | None:
    """Why the submodule cannot be checked out from `local`, or None when it can."""
    if not _is_safe_name(submodule.name):
        return f"its name {submodule.name!r} leaves .git/modules (git refuses such a name too)"
    if local is None:
        where = f" at {developer_top}" if developer_top is not None else ""
        return (f"no local repository of {submodule.name!r} in the clone{where} "
                "(git submodule update --init makes one)")
    if not Repository.at_git_dir(local).has_commit(submodule.commit):
        return f"{local} lacks its commit {submodule.commit[:12]} (git submodule update fetches it)"
    return None


def _check_out(local: Path, submodule: Submodule, checkout: Path) -> str | None:
    """Check the gitlink's commit out at its path; None, or why that failed."""
    try:
        Repository.at_git_dir(local).check_out_copy(checkout / submodule.path, submodule.commit)
    except GitCommandFailed as error:
        return str(error)
    return None


def _git_dirs(git_dir: Path) -> list[Path]:
    """Where a repository's submodules may keep their repositories: its git directory and,
    for a linked worktree, the main one's (``commondir``)."""
    common = git_dir / "commondir"
    if not common.is_file():
        return [git_dir]
    return [git_dir, (git_dir / common.read_text().strip()).resolve()]


def _git_dir_at(path: Path) -> Path | None:
    """The git directory of a checkout at `path`: its .git directory, or the one its .git file names."""
    dot_git = path / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        text = dot_git.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            return (path / text[len("gitdir:"):].strip()).resolve()
    return None


def _is_safe_name(name: str) -> bool:
    """A name that stays inside .git/modules: no `..` component (a commit's .gitmodules is
    anyone's text; git checks names the same way)."""
    return bool(name) and ".." not in name.replace("\\", "/").split("/")


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()
