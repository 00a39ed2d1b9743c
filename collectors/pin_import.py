"""Importing Pin `proccount` output, the profiles the seed studies were built on.

proccount writes one line per routine::

    #  Procedure   Image   Address   Calls   Instructions
    main  /usr/bin/prog  0x401136  1  52341

Pin cannot be installed here, but teams that have proccount files can bring them in
with the same table shape as callgrind's (inclusive counts are not in the format).
"""

from __future__ import annotations

import os

import pyarrow as pa

from perf_selector.collectors.arrow_rows import table_of_rows

from perf_selector.collectors.callgrind import PROFILE_COLUMNS, binary_keys, normalize_function
from perf_selector.collectors.errors import UserError


def read_proccount(path: str | os.PathLike[str], binary: str | os.PathLike[str] | None = None) -> pa.Table:
    binary_name = os.path.basename(os.path.realpath(binary)) if binary else None
    keys = binary_keys(binary)  # Pin prints C++ names demangled; the tables key them mangled
    merged: dict[tuple[str, str], list[int]] = {}
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        # Procedure names may hold spaces (C++); the last four columns never do.
        if len(fields) < 5 or not fields[-3].startswith("0x") or not (fields[-2].isdigit() and fields[-1].isdigit()):
            raise UserError(f"{path}:{number}: not a proccount line (Procedure Image Address Calls Instructions)")
        procedure, image = " ".join(fields[:-4]), os.path.basename(fields[-4])
        name = normalize_function(procedure)
        key = (image, keys.get(name, name) if image == binary_name else name)
        row = merged.setdefault(key, [0, 0])
        row[0] += int(fields[-2])
        row[1] += int(fields[-1])
    rows = [(name, image, image == binary_name, calls, own) for (image, name), (calls, own) in merged.items()]
    table = table_of_rows(rows, PROFILE_COLUMNS[:-1])
    # proccount counts no inclusive instructions: a null column of the declared type
    table = table.append_column("inclusive_instructions", pa.nulls(table.num_rows, pa.int64()))
    return table.sort_by([("self_instructions", "descending")])
