"""The store kept out of the project's commits: its line in the repository's .gitignore.

A store inside the checkout that git does not ignore shows up in `git status` as
hundreds of untracked Parquet files, and one `git add -A` commits them.  `hook install`
adds the store's line once; where git ignores the store already (any .gitignore,
info/exclude, the global excludes) or the store lies outside the checkout, the file is
left as it is and the message says why.
"""

from __future__ import annotations

from pathlib import Path

from perf_selector.collectors.repository import Repository

COMMENT = "# perf-selector's store (measurements, profiles, models): local, never committed"


def ignore_store(repository: Repository, store: str | Path) -> str:
    """Add the store's directory (a path, or an fsspec URL) to the top's .gitignore unless git
    ignores it already; returns what was done, for the command's output."""
    entry = _entry(repository.top, str(store))
    if entry is None:
        return f"the store is outside the repository ({store}): .gitignore left as it is"
    if repository.is_ignored(entry.lstrip("/")):
        return f"git ignores {entry} already: .gitignore left as it is"
    gitignore = repository.top / ".gitignore"
    existed = gitignore.exists()
    text = gitignore.read_text(encoding="utf-8") if existed else ""
    separator = "\n" if text and not text.endswith("\n") else ""
    gitignore.write_text(f"{text}{separator}{COMMENT}\n{entry}\n", encoding="utf-8")
    done = f"added {entry} to .gitignore" if existed else f"created .gitignore with {entry}"
    return f"{done} (commit it: git then leaves the store out of every commit)"


def _entry(top: Path, location: str) -> str | None:
    """The .gitignore line of the store (anchored at the top, a directory), or None when the
    store is not a directory inside the checkout (elsewhere on disk, or an fsspec URL)."""
    if "://" in location:
        return None
    store = Path(location).resolve()
    try:
        relative = store.relative_to(top.resolve())
    except ValueError:
        return None
    return f"/{relative.as_posix()}/" if relative.parts else None
