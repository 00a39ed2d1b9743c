"""Collectors: commits and builds, static ELF analysis (later: benchmarks, profiles).

Public surface::

    analyse_binary(path) -> StaticAnalysis      # functions and data objects of one binary
    diff_functions(old, new), diff_objects(old, new)
    select_commits(repo, ...), open_repository(path)
    UserError, BinaryError
"""

from collectors.errors import BinaryError, UserError
from collectors.git_history import CommitInfo, open_repository, select_commits
from collectors.static_analysis import StaticAnalysis, analyse_binary
from collectors.static_diff import diff_functions, diff_objects

__all__ = [
    "BinaryError", "CommitInfo", "StaticAnalysis", "UserError",
    "analyse_binary", "diff_functions", "diff_objects", "open_repository", "select_commits",
]
