"""selector: predict which benchmarks a commit changes, and run only those.

Public surface: the ``selector`` command (:mod:`selector.cli`), :class:`Store`,
:func:`load_config`, :func:`collect`.
"""


def __getattr__(name: str):
    # The version is looked up when asked for: importlib.metadata costs time at every
    # start of the command, which runs on every push.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("perf-selector")
        except PackageNotFoundError:  # running from a source tree that is not installed
            return "0.0.0+unknown"
    raise AttributeError(f"module 'selector' has no attribute {name!r}")
