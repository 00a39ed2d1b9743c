"""The JSON Schema of `selector select --format json`'s document (docs/select.schema.json),
which the tests of select validate each document against."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA = json.loads((Path(__file__).parent.parent.parent / "docs" / "select.schema.json").read_text())
