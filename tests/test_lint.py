"""The whole tree passes ruff's pyflakes rules (unused imports and names, undefined names,
syntax errors), notebooks included: CI fails on a stray import like any other defect."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_pyflakes_rules_are_clean_on_the_whole_tree():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed (it is in the 'test' extra: pip install -e '.[test]')")
    result = subprocess.run([ruff, "check", "--select", "F,E9", "--output-format", "concise", str(ROOT)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
