"""The core install and its extras: what each extra brings matches pyproject.toml, the
push path runs without any extra, and a command whose extra is missing says which one
to install, in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest

from perf_selector.selector import extras
from perf_selector.selector.extras import EXTRAS, MissingExtra, missing_extra_error, require
from tests.helpers import compile_c
from tests.helpers import assert_one_line_error, core_python

PYPROJECT = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
SELF = PYPROJECT["name"]


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _own_extras(requirement: str) -> list[str]:
    return re.search(r"\[(.*)\]", requirement).group(1).split(",")


def _distributions(extra: str) -> set[str]:
    """The distributions an extra lists, its references to other extras of ours expanded."""
    names: set[str] = set()
    for requirement in PYPROJECT["optional-dependencies"][extra]:
        if _name(requirement) == SELF:
            for inner in _own_extras(requirement):
                names |= _distributions(inner)
        else:
            names.add(_name(requirement))
    return names


def _with_their_requirements(distributions: set[str]) -> set[str]:
    found = set(distributions)
    for distribution in distributions:
        try:
            found |= {_name(requirement) for requirement in requires(distribution) or []}
        except PackageNotFoundError:
            pass
    return found


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_each_extra_brings_the_modules_the_code_names_for_it(extra):
    assert extra in PYPROJECT["optional-dependencies"], f"pyproject.toml has no extra {extra!r}"
    providers = {module: {_name(d) for d in distributions} for module, distributions in packages_distributions().items()}
    listed = _distributions(extra)
    reachable = _with_their_requirements(listed)
    for module in EXTRAS[extra]:
        assert providers.get(module, set()) & reachable, f"{module} is not installed by the {extra!r} extra ({sorted(listed)})"
    for distribution in listed:
        modules = {module for module, names in providers.items() if distribution in names}
        assert modules & set(EXTRAS[extra]), f"{distribution} of the {extra!r} extra provides none of {EXTRAS[extra]}"


def test_the_core_install_lists_no_module_of_an_extra():
    providers = {module: {_name(d) for d in distributions} for module, distributions in packages_distributions().items()}
    core = {_name(requirement) for requirement in PYPROJECT["dependencies"]}
    for extra, modules in EXTRAS.items():
        for module in modules:
            assert not providers.get(module, set()) & core, f"{module} ({extra}) is in the core install"
    assert _distributions("all") >= set().union(*(_distributions(extra) for extra in EXTRAS))


def test_a_missing_extra_is_named_with_the_command_that_installs_it(monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "report", ("matplotlib", "no_such_module_for_this_test"))
    with pytest.raises(MissingExtra) as raised:
        require("selector report", "collect", "report", otherwise="pass --no-report")
    message = str(raised.value)
    assert "'report' extra" in message and "no_such_module_for_this_test not installed" in message
    assert "pip install 'perf-selector[report]', or pass --no-report" in message and "\n" not in message
    assert raised.value.exit_status == 2
    require("selector collect", "collect")  # installed here: no error
    error = missing_extra_error(ModuleNotFoundError("No module named 'sklearn'", name="sklearn.base"), "selector train")
    assert "'train' extra" in str(error) and "pip install 'perf-selector[train]'" in str(error)
    assert missing_extra_error(ModuleNotFoundError("x", name="our_own_typo"), "selector train") is None


@pytest.fixture(scope="module")
def core():
    python = core_python()
    if python is None:
        if os.environ.get("SELECTOR_REQUIRE_CORE") == "1":
            pytest.fail("SELECTOR_REQUIRE_CORE=1 but SELECTOR_CORE_PYTHON names no core-only interpreter")
        pytest.skip("SELECTOR_CORE_PYTHON not set (CI makes a core-only environment: pip install -e . without extras)")
    return python


def _core_selector(python: str, *arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "perf_selector", *arguments], capture_output=True, text=True, cwd=cwd)


def test_the_core_environment_has_no_extra_installed(core):
    probe = "import json, importlib.util as u; print(json.dumps({m: u.find_spec(m) is not None for m in %r}))"
    modules = sorted({module for names in EXTRAS.values() for module in names})
    found = json.loads(subprocess.run([core, "-c", probe % modules], capture_output=True, text=True, check=True).stdout)
    assert not any(found.values()), f"the core environment has modules of extras: {[m for m, f in found.items() if f]}"


def test_functions_and_diff_on_the_core_install_print_what_the_full_install_prints(core, tmp_path):
    old = compile_c("int f(int x) { return x * 2; }\nint g(int x) { return x + 1; }\n"
                    "int main(int c, char **v) { return f(c) + g(c); }\n", tmp_path / "old", "-O2 -g")
    new = compile_c("int f(int x) { return x * 3; }\nint g(int x) { return x + 1; }\n"
                    "int h(int x) { return x - 1; }\nint main(int c, char **v) { return f(c) + g(c) + h(c); }\n",
                    tmp_path / "new", "-O2 -g")
    for arguments in (["functions", str(old), "--format", "json"], ["diff", str(old), str(new), "--format", "json"]):
        light = _core_selector(core, *arguments)
        full = subprocess.run([sys.executable, "-m", "perf_selector", *arguments], capture_output=True, text=True)
        assert light.returncode == 0, light.stderr
        assert json.loads(light.stdout) == json.loads(full.stdout)
    summary = json.loads(_core_selector(core, "diff", str(old), str(new), "--format", "json").stdout)["summary"]
    assert summary["new_functions"] == 1 and summary["changed_functions"] >= 1
    text = _core_selector(core, "functions", str(new), "--sort", "size")
    assert text.returncode == 0 and "fingerprint" in text.stdout


@pytest.mark.parametrize(("arguments", "extra"), [
    (["collect"], "'collect'"), (["record"], "'collect'"), (["calibrate"], "'collect'"), (["confirm"], "'collect'"),
    (["train"], "'train'"), (["backtest"], "'train'"), (["demo"], "perf-selector[all]"),
])
def test_commands_of_an_extra_say_which_one_to_install_on_the_core_install(core, tmp_path, arguments, extra):
    result = _core_selector(core, *arguments, cwd=tmp_path)
    assert_one_line_error(result, extra, "pip install 'perf-selector[")
