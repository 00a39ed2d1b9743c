"""A git repository, read (and its worktrees made) through git's own commands.

Every command of the tool reads git here: collection choosing commits, builds making
worktrees, `select` on every push.  Each method is one ``git`` process, which is what
GitPython ran for each of our calls too; GitPython itself is not used, because its import
is a noticeable part of a selection (docs/performance.md), the push path
therefore kept a second reader of its own, and nothing we asked of GitPython needed more
than the command it wrapped.  (The test suite still checks these answers against
GitPython's: ``tests/test_repository.py``.)
"""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from perf_selector.collectors.commit_graph import CommitInfo
from perf_selector.collectors.errors import UserError

# %B is the raw message: its first line is the subject line as written (git's %s folds
# the first paragraph into one line).  Messages hold no NUL, so NUL separates fields.
_COMMIT_FORMAT = "%H%x00%P%x00%at%x00%B"
_COMMIT_FIELDS = 4

# git's repository-local environment (`git rev-parse --local-env-vars`).  A hook that runs
# us sets some of it (GIT_DIR, GIT_INDEX_FILE): left in place, it would turn a command meant
# for a submodule's repository to the developer's own.
_LOCAL_ENVIRONMENT = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
                      "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
                      "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
                      "GIT_SHALLOW_FILE", "GIT_COMMON_DIR")


class GitCommandFailed(UserError):
    """A git command exited non-zero: one line naming the command and what git said."""

    def __init__(self, arguments: tuple[str, ...], directory: Path | str, stderr: str) -> None:
        self.stderr = stderr.strip()
        last = self.stderr.splitlines()[-1] if self.stderr else "no message"
        super().__init__(f"git {' '.join(arguments[:2])} failed in {directory}: {last}")


class Repository:
    """The checkout at `top` and its git directory (a worktree's own, for a linked worktree)."""

    def __init__(self, top: Path, git_dir: Path) -> None:
        self.top = top
        self.git_dir = git_dir
        self._options: tuple[str, ...] = ()
        self._environment: dict[str, str] | None = None

    @classmethod
    def at_git_dir(cls, git_dir: Path) -> "Repository":
        """The repository in `git_dir` alone, as `git submodule` keeps a submodule's
        (``.git/modules/<name>``): objects and refs are read, no checkout.  Its own
        core.worktree (the developer's checkout of it) may be gone, and git refuses to start
        when it cannot enter it: the git directory stands in as a work tree nothing reads."""
        repository = cls(git_dir, git_dir)
        repository._options = (f"--git-dir={git_dir}", f"--work-tree={git_dir}")
        repository._environment = _local_only_environment()
        return repository

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "Repository":
        """The repository whose checkout holds `path` (a one-line error otherwise)."""
        if not Path(path).is_dir():
            raise UserError(f"{path}: not inside a git repository")
        result = _run(path, ("rev-parse", "--show-toplevel", "--absolute-git-dir"), check=False)
        lines = result.stdout.splitlines()
        if result.returncode != 0 or len(lines) != 2:
            raise UserError(f"{path}: not inside a git repository")
        return cls(Path(lines[0]), Path(lines[1]))

    def git(self, *arguments: str) -> str:
        """The output of ``git arguments`` run at the top, without its trailing newline."""
        return _run(self.top, arguments, options=self._options, environment=self._environment).stdout.rstrip("\n")

    # ------------------------------------------------------------------ commits
    def resolve(self, revision: str) -> str | None:
        """The sha of the commit `revision` names, or None when it names none."""
        found = _run(self.top, ("rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"),
                     check=False)
        return found.stdout.strip() if found.returncode == 0 else None

    def commit(self, revision: str) -> CommitInfo | None:
        """The commit `revision` names, or None when it names none."""
        sha = self.resolve(revision)
        return None if sha is None else _commits(self.git("show", "-s", "-z", f"--format={_COMMIT_FORMAT}", sha))[0]

    def commits(self, revision: str = "HEAD", since: str | None = None, max_count: int | None = None,
                first_parent: bool = False) -> list[CommitInfo]:
        """Commits reachable from `revision` (a sha, branch or ``A..B`` range), oldest first.

        ``max_count`` keeps the newest N; ``since`` is any date git understands
        ("2 weeks ago", "2024-01-31"); ``first_parent`` follows only the mainline.
        """
        options = ["--first-parent"] if first_parent else []
        if since:
            options.append(f"--since={since}")
        if max_count is not None:
            if max_count < 1:
                raise UserError(f"-n must be at least 1 (got {max_count})")
            options.append(f"--max-count={max_count}")
        try:
            listing = self.git("log", "-z", "--no-show-signature", f"--format={_COMMIT_FORMAT}", *options, revision, "--")
        except GitCommandFailed as error:
            last = error.stderr.splitlines()[-1] if error.stderr else "unknown revision"
            raise UserError(f"cannot list commits of {revision!r}: {last}") from None
        return list(reversed(_commits(listing)))

    def ancestry(self, sha: str, max_count: int) -> dict[str, list[str]]:
        """The parents of `sha` and of its ancestors, newest first, at most `max_count` commits."""
        parents = {}
        for line in self.git("rev-list", "--parents", f"--max-count={max_count}", sha).splitlines():
            commit_sha, *its_parents = line.split()
            parents[commit_sha] = its_parents
        return parents

    def first_parent_ancestors(self, sha: str, max_count: int) -> list[str]:
        """The first-parent ancestors of `sha`, nearest first, at most `max_count` of them."""
        return self.git("rev-list", "--first-parent", f"--max-count={max_count + 1}", sha).split()[1:]

    def has_commit(self, sha: str) -> bool:
        """Does this repository hold the commit `sha` (the object, reachable or not)?"""
        found = _run(self.top, ("cat-file", "-e", f"{sha}^{{commit}}"), check=False, options=self._options,
                     environment=self._environment)
        return found.returncode == 0

    def is_ancestor(self, ancestor: str, sha: str) -> bool:
        """Is `ancestor` reachable from `sha` (``git merge-base --is-ancestor``; a commit is its own)?"""
        return _run(self.top, ("merge-base", "--is-ancestor", ancestor, sha), check=False).returncode == 0

    # ------------------------------------------------------------------ trees
    def tree_listing(self, sha: str) -> str:
        """``git ls-tree -r``: mode, type, object and path of every file of the commit's tree."""
        return self.git("ls-tree", "-r", sha)

    def changed_paths(self, old: str, new: str) -> list[str]:
        """The paths that differ between two commits (renames as a deletion and an addition)."""
        return self.git("diff", "--name-only", "--no-renames", old, new).splitlines()

    def gitlinks(self, sha: str, paths: list[str]) -> dict[str, str]:
        """path -> commit of the submodule entries (gitlinks) at `paths` in the commit's tree;
        paths that are not gitlinks there are left out."""
        if not paths:
            return {}
        listing = self.git("ls-tree", "-z", "--full-tree", sha, "--", *paths)
        entries = (entry.split("\t", 1) for entry in listing.split("\0") if entry)
        return {path: meta.split()[2] for meta, path in entries if meta.split()[1] == "commit"}

    # ------------------------------------------------------------------ the working tree
    def has_uncommitted_changes(self) -> bool:
        """Do tracked files (or the index) differ from HEAD?  Untracked files do not count."""
        return bool(self.git("status", "--porcelain", "--untracked-files=no"))

    def tracked_files(self) -> list[str]:
        """The paths of the index's files, relative to the top; submodules (gitlinks) left out."""
        listing = self.git("ls-files", "-z", "--stage")
        entries = (entry.split("\t", 1) for entry in listing.split("\0") if entry)
        return [path for meta, path in entries if not meta.startswith("160000 ")]

    def is_ignored(self, path: str) -> bool:
        """Would git ignore `path` (relative to the top): any .gitignore, info/exclude, the global one."""
        return _run(self.top, ("check-ignore", "-q", "--no-index", path), check=False).returncode == 0

    def hooks_directory(self) -> Path:
        """Where git looks for this checkout's hooks (core.hooksPath honoured)."""
        path = Path(self.git("rev-parse", "--git-path", "hooks"))
        return path if path.is_absolute() else (self.top / path).resolve()

    # ------------------------------------------------------------------ worktrees
    def add_worktree(self, path: Path, sha: str) -> None:
        # Forced twice: a run killed inside `worktree add` leaves its entry locked.
        self.git("worktree", "add", "--detach", "-f", "-f", str(path), sha)

    def remove_worktree(self, path: Path) -> None:
        self.git("worktree", "remove", "--force", str(path))

    def prune_worktrees(self) -> None:
        """Forget the worktrees whose directories are gone."""
        self.git("worktree", "prune")

    def check_out_copy(self, path: Path, sha: str) -> None:
        """A checkout of `sha` at `path` (absent or empty) in a repository of its own that
        borrows this one's objects (``git clone --shared``) and copies its refs, tags
        included (a build that asks ``git describe`` gets its developer's answer).  Nothing
        is fetched and nothing written here: file transport only, and no hooks run."""
        environment = {**_local_only_environment(), "GIT_ALLOW_PROTOCOL": "file"}
        options = ("-c", "protocol.file.allow=always", "-c", "core.hooksPath=/dev/null")
        _run(path.parent, ("clone", "--shared", "--no-checkout", "--quiet", str(self.git_dir), str(path)),
             options=options, environment=environment)
        _run(path, ("checkout", "--quiet", "--detach", sha), options=(*options, "-c", "advice.detachedHead=false"),
             environment=environment)


def submodule_paths(gitmodules: Path) -> dict[str, str]:
    """name -> path of the submodules a ``.gitmodules`` file declares (none when it is absent)."""
    if not gitmodules.is_file():
        return {}
    found = _run(gitmodules.parent, ("config", "--file", str(gitmodules), "-z", "--get-regexp", r"^submodule\..*\.path$"),
                 check=False)
    if found.returncode != 0:  # 1: no submodule has a path
        return {}
    entries = (entry.split("\n", 1) for entry in found.stdout.split("\0") if "\n" in entry)
    return {key[len("submodule."):-len(".path")]: path for key, path in entries}


def _local_only_environment() -> dict[str, str]:
    """This process's environment without git's repository-local variables, and without
    prompts: a command that would need credentials fails instead of waiting."""
    environment = {name: value for name, value in os.environ.items() if name not in _LOCAL_ENVIRONMENT}
    return {**environment, "GIT_TERMINAL_PROMPT": "0"}


def _commits(listing: str) -> list[CommitInfo]:
    """CommitInfo of each record of a ``-z`` listing in :data:`_COMMIT_FORMAT`, in its order."""
    fields = listing.split("\0")
    commits = []
    for start in range(0, len(fields) - _COMMIT_FIELDS + 1, _COMMIT_FIELDS):
        sha, parents, author_time, message = fields[start:start + _COMMIT_FIELDS]
        commits.append(CommitInfo(sha=sha.strip(), parents=tuple(parents.split()),
                                  author_time=datetime.fromtimestamp(int(author_time), tz=timezone.utc),
                                  subject=message.split("\n", 1)[0]))
    return commits


def _run(directory: str | os.PathLike[str], arguments: tuple[str, ...], check: bool = True, options: tuple[str, ...] = (),
         environment: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(["git", "-C", str(directory), *options, *arguments], capture_output=True, text=True,
                                encoding="utf-8", errors="replace", env=environment)
    except FileNotFoundError:
        raise UserError("git is not installed (or not on PATH)") from None
    if check and result.returncode != 0:
        raise GitCommandFailed(arguments, directory, result.stderr)
    return result
