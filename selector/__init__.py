"""selector: predict which benchmarks a commit changes, and run only those.

Public surface: the ``selector`` command (:mod:`selector.cli`), :class:`Store`,
:func:`load_config`, :func:`collect`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("perf-selector")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
