"""The layering docs/architecture.md states, checked against the code: the five packages
import one way (collectors -> storage -> features -> models -> selector), selector's subpackages
too (its shared modules -> collection -> selection -> evaluation -> onboarding -> commands -> cli),
and no module imports, at any depth and counting imports inside functions, a module that
imports it back.  And the
tests stand alone: no test module imports another; what they share is in tests/helpers."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["collectors", "storage", "features", "models", "selector"]
NAMESPACE = "perf_selector"  # the one package the install puts in site-packages (pyproject.toml)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _in_repository(module: str) -> str:
    """An installed module's name as its folder in the repository: perf_selector.models.x is models/x.py."""
    return module.removeprefix(f"{NAMESPACE}.")


def _imports() -> dict[str, set[str]]:
    """Each of our modules and the modules of ours it imports (anywhere in its text)."""
    modules = {_module_name(path): path for layer in LAYERS for path in (ROOT / layer).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(_in_repository(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from collectors import _native` names a module, `from x.y import f` a name of x.y
                module = _in_repository(node.module)
                imported.update(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                                for alias in node.names)
        graph[name] = {module for module in imported if module in modules and module != name}
    return graph


def test_packages_import_one_way():
    upward = [(module, imported) for module, targets in _imports().items() for imported in targets
              if LAYERS.index(imported.split(".")[0]) > LAYERS.index(module.split(".")[0])]
    assert upward == []


def test_no_module_imports_one_that_imports_it_back():
    graph = _imports()
    # a package's __init__ may gather its modules; the modules importing their package
    # (for a shared name) would otherwise read as a circle that Python resolves at load
    graph = {module: {t for t in targets if t not in LAYERS} for module, targets in graph.items()}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())  # the order is made as it is read
    except graphlib.CycleError as error:
        pytest.fail(f"import circle: {' -> '.join(error.args[1])}")


# selector/ drawn as what a user does, bottom to top (docs/architecture.md): the shared pieces
# at its top level, then each use case's subpackage, then the commands, then the entry point.
# A module imports only from its own floor or those below it.
SELECTOR_FLOORS = ["shared", "collection", "selection", "evaluation", "onboarding", "commands", "entry"]
ENTRY = {"selector", "selector.cli", "selector.__main__"}


def _selector_floor(module: str) -> str:
    if module in ENTRY:
        return "entry"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (ROOT / "selector" / parts[1]).is_dir() else "shared"


def test_selector_top_level_holds_at_most_ten_modules():
    modules = sorted(path.name for path in (ROOT / "selector").glob("*.py"))
    assert len(modules) <= 10, modules


def test_selector_subpackages_import_only_their_floor_or_below():
    selector_modules = {module: targets for module, targets in _imports().items() if module.startswith("selector")}
    floors = {_selector_floor(module) for module in selector_modules}
    assert floors == set(SELECTOR_FLOORS), floors  # a new subpackage takes its place in the list
    upward = sorted((module, imported) for module, targets in selector_modules.items() for imported in targets
                    if imported.startswith("selector")
                    and SELECTOR_FLOORS.index(_selector_floor(imported)) > SELECTOR_FLOORS.index(_selector_floor(module)))
    assert upward == []


@pytest.mark.parametrize("layer", LAYERS)
def test_every_name_a_package_exports_resolves(layer):
    """A package's public surface (its lazily loaded __all__) names only what exists."""
    import importlib

    package = importlib.import_module(f"{NAMESPACE}.{layer}")
    for name in getattr(package, "__all__", []):
        assert getattr(package, name) is not None, f"{layer}.{name}"


TESTS = ROOT / "tests"


def _test_modules_imported(path: Path) -> set[str]:
    """The test modules (tests/test_*.py) a file under tests/ imports, anywhere in its text:
    `import tests.test_x`, `from tests.test_x import ...`, `from tests import test_x`, and
    the relative or bare spellings `from .test_x import ...`, `from test_x import ...`."""
    names = {test.stem for test in TESTS.glob("test_*.py")}

    def test_module(dotted: str) -> str | None:
        parts = dotted.split(".")
        if parts[0] == "tests":
            parts = parts[1:]
        return parts[0] if parts and parts[0] in names else None

    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported.update(test_module(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            imported.add(test_module(module) if module else None)
            if module in ("", "tests"):  # from tests import test_x, from . import test_x
                imported.update(test_module(alias.name) for alias in node.names)
    return imported - {None, path.stem}


def test_no_test_module_imports_another():
    """What several tests share lives in tests/helpers (and conftest.py's fixtures): a test
    module imports no other test module, so each runs, and reads, alone (issue 49)."""
    files = [*TESTS.glob("test_*.py"), *TESTS.glob("conftest.py"), *(TESTS / "helpers").rglob("*.py")]
    assert len(files) > 50
    importing = {str(path.relative_to(ROOT)): sorted(imported) for path in sorted(files)
                 if (imported := _test_modules_imported(path))}
    assert importing == {}


def test_the_architecture_page_draws_every_selector_module_in_its_subpackage():
    """docs/architecture.md's tree of selector/ names each module on its subpackage's lines."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    tree = text[text.index("```\nselector/\n"):]
    tree = tree[:tree.index("\n```", 4)]
    floors = {}  # each subpackage's lines of the tree: from its name to the next name at that indent
    current = None
    for line in tree.splitlines()[1:]:
        if line.startswith("  ") and not line.startswith("   "):
            current = line.split()[0].rstrip("/,")
        floors[current] = floors.get(current, "") + line
    missing = [f"{path.parent.name}/{path.stem}" for path in sorted((ROOT / "selector").glob("*/*.py"))
               if path.stem != "__init__" and path.parent.name != "commands"
               and path.stem not in floors.get(path.parent.name, "")]
    assert missing == []
