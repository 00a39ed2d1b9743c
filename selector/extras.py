"""Which install extra a command needs, and the one-line error when it is missing.

The core install (`pip install perf-selector`) carries the push path: `select`, the
pre-push hook, `functions` and `diff`.  Collecting, learning, tracking, Dask and the
report are extras of pyproject.toml; this module names the modules each one brings
(their import names, which a test checks against pyproject.toml), so a command can
fail before it starts work, in one line that says what to install.
"""

from __future__ import annotations

from importlib.util import find_spec

from perf_selector.collectors.errors import UserError

DISTRIBUTION = "perf-selector"

# extra -> the top-level modules it installs (import names), smallest extras first
EXTRAS: dict[str, tuple[str, ...]] = {
    "collect": ("pandas", "scipy"),
    "train": ("pandas", "scipy", "sklearn", "xgboost", "skops", "onnx", "skl2onnx", "onnxmltools", "mapie"),
    "tracking": ("mlflow", "sqlalchemy", "alembic"),
    "dask": ("dask", "distributed"),
    "report": ("matplotlib",),
    "bench": ("capstone",),
}


class MissingExtra(UserError):
    """A command needs modules of an extra that is not installed (exit 2, one line)."""


def install_hint(extras: list[str]) -> str:
    return f"pip install '{DISTRIBUTION}[{','.join(extras)}]'"


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here (found without importing them)."""
    return [module for module in EXTRAS[extra] if find_spec(module) is None]


def require(what: str, *extras: str, otherwise: str | None = None) -> None:
    """Raise MissingExtra unless every module of `extras` is installed.  `what` names the
    work that needs them ("selector train"); `otherwise` is a way around it, if any."""
    lacking = {extra: missing_modules(extra) for extra in extras}
    lacking = {extra: modules for extra, modules in lacking.items() if modules}
    if not lacking:
        return
    names = ", ".join(f"'{extra}'" for extra in lacking)
    modules = list(dict.fromkeys(module for found in lacking.values() for module in found))
    shown = ", ".join(modules[:3]) + (f" and {len(modules) - 3} more" if len(modules) > 3 else "")
    alternative = f", or {otherwise}" if otherwise else ""
    # Several extras missing: the one that has everything is the simpler thing to install.
    hint = install_hint(list(lacking) if len(lacking) <= 2 else ["all"])
    raise MissingExtra(f"{what} needs the {names} extra{'s' if len(lacking) > 1 else ''} ({shown} not installed): "
                       f"{hint}{alternative}")


def extra_providing(module: str) -> str | None:
    """The smallest extra that installs `module` (a dotted name is judged by its top level)."""
    top = module.split(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


def missing_extra_error(error: ModuleNotFoundError, what: str) -> MissingExtra | None:
    """The one-line error for an import that failed because an extra is missing, or None
    when the module is not one of ours to name (a real bug: let it show)."""
    extra = extra_providing(error.name or "")
    if extra is None:
        return None
    return MissingExtra(f"{what} needs the '{extra}' extra ({error.name} not installed): {install_hint([extra])}")
