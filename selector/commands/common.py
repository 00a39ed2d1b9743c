"""What several commands share: where a project's store is when --store is not given."""

from __future__ import annotations

from pathlib import Path

from collectors.errors import UserError

DEFAULT_STORE = ".selector"


def default_store(repository: Path) -> Path:
    """Every command's store when --store is not given: .selector/ at the top of the repository
    (of the current directory's, when not inside one: ./.selector)."""
    from collectors.repository import Repository

    try:
        return Repository.open(repository).top / DEFAULT_STORE
    except UserError:
        return Path(repository) / DEFAULT_STORE
