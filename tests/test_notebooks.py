"""The evaluation notebooks run top to bottom on the collected demo history."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
pytestmark = pytest.mark.slow


def test_there_are_the_four_studies():
    assert [path.name.split("_")[0] for path in NOTEBOOKS] == ["1", "2", "3", "4"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, evolved_sample, monkeypatch, tmp_path):
    root, _ = evolved_sample
    monkeypatch.setenv("SELECTOR_PROJECT", str(root))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    # every study ends in a table or a figure
    assert any("text/html" in o.get("data", {}) or "image/png" in o.get("data", {}) for o in outputs)
