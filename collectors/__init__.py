"""Collectors: commits and builds, static ELF analysis, benchmark runs, profiles (callgrind,
perf, Pin) and imported results: everything that turns a commit into stored records.

Public surface::

    analyse_binary(path) -> StaticAnalysis      # functions and data objects of one binary
    diff_functions(old, new), diff_objects(old, new)
    Repository.open(path).commits(...)          # git, read with git's own commands
    UserError, BinaryError
"""

import lazy_loader

# Loaded on first use: `selector select` on the push path should not import the Python
# decoder or the repository reader for an `errors` import.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "errors": ["BinaryError", "UserError"],
        "commit_graph": ["CommitInfo"],
        "repository": ["Repository"],
        "static_analysis": ["StaticAnalysis", "analyse_binary"],
        "static_diff": ["diff_functions", "diff_objects"],
    },
)
