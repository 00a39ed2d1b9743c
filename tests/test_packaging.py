"""What `pip install` puts into site-packages: one package, perf_selector, whose
subpackages are the repository's top-level folders (pyproject.toml's package-dir), so a
user's own `models` or `features` package and ours never shadow each other."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "perf_selector"
FOLDERS = ["collectors", "storage", "features", "models", "selector"]


def test_every_package_of_the_repository_is_installed_under_the_namespace():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {NAMESPACE} | {
        ".".join([NAMESPACE, *init.parent.relative_to(ROOT).parts])
        for folder in FOLDERS for init in (ROOT / folder).rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == found
    assert {name: ROOT / path for name, path in setuptools["package-dir"].items()} == \
        {NAMESPACE: ROOT / NAMESPACE, **{f"{NAMESPACE}.{folder}": ROOT / folder for folder in FOLDERS}}


@pytest.mark.slow
def test_the_wheel_installs_one_package_beside_a_users_own_models_and_features(tmp_path):
    wheels = tmp_path / "wheels"
    # Built in the tree, so cargo reuses native/target (the editable install built it).
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)], check=True,
                   capture_output=True)
    wheel = next(wheels.glob("perf_selector-*.whl"))
    top_level = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {NAMESPACE}

    # A fresh environment with the wheel (its dependencies from this one's site-packages)
    # and, on the path, a project of the user's with packages named as our folders were.
    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(environment)], check=True)
    python = environment / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    users = tmp_path / "users-project"
    for package in ("models", "features"):
        (users / package).mkdir(parents=True)
        (users / package / "__init__.py").write_text(f"OWNER = 'the user'\nNAME = {package!r}\n")
    check = ("import models, features\n"
             "import perf_selector.models.bundle, perf_selector.features.builder, perf_selector.selector.cli\n"
             "assert models.OWNER == features.OWNER == 'the user', (models.__file__, features.__file__)\n"
             "print(perf_selector.models.bundle.__file__)\n")
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    imported = subprocess.run([str(python), "-c", check], cwd=users, capture_output=True, text=True,
                              env={**clean, "PYTHONPATH": str(users)})
    assert imported.returncode == 0, imported.stderr
    assert str(environment) in imported.stdout  # ours came from the wheel, not from the repository
    helped = subprocess.run([str(environment / "bin" / "selector"), "--help"], cwd=users, capture_output=True,
                            text=True, env={**clean, "PYTHONPATH": str(users)})
    assert helped.returncode == 0, helped.stderr
    assert "Predict which benchmarks a commit changes" in helped.stdout
