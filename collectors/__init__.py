"""Collectors: commits and builds, static ELF analysis (later: benchmarks, profiles).

Public surface::

    analyse_binary(path) -> StaticAnalysis      # functions and data objects of one binary
    diff_functions(old, new), diff_objects(old, new)
    select_commits(repo, ...), open_repository(path)
    UserError, BinaryError
"""

from importlib import import_module

# Loaded on first use: `selector select` on the push path should not import the Python
# decoder or GitPython's helpers for an `errors` import.
_WHERE = {
    "BinaryError": "errors", "UserError": "errors",
    "CommitInfo": "git_history", "open_repository": "git_history", "select_commits": "git_history",
    "StaticAnalysis": "static_analysis", "analyse_binary": "static_analysis",
    "diff_functions": "static_diff", "diff_objects": "static_diff",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'collectors' has no attribute {name!r}")
    return getattr(import_module(f"collectors.{_WHERE[name]}"), name)
