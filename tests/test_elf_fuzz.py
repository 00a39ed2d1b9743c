"""Malformed ELF inputs: a clear BinaryError or a result, never another exception or a hang.

Hypothesis mutates a real gcc-built binary: truncations, random bytes over the ELF and
section headers, huge sizes and offsets, and symbol tables with overlapping or absurd
entries.  Every input must finish within 2 seconds.
"""

from __future__ import annotations

import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perf_selector.collectors.errors import BinaryError
from perf_selector.collectors.static_analysis import analyse_binary
from tests.helpers import compile_c

SOURCE = r"""
#include <stdio.h>
static int table[4] = {1, 2, 3, 4};
int pick(int i) { switch (i) { case 0: return 3; case 1: return 5; case 2: return 7; case 3: return 11; case 4: return 13; default: return table[i & 3]; } }
int main(int argc, char **argv) { printf("%d\n", pick(argc)); return 0; }
"""


@pytest.fixture(scope="module")
def seed_binary(tmp_path_factory) -> bytes:
    return compile_c(SOURCE, tmp_path_factory.mktemp("fuzz") / "seed", "-O2 -g").read_bytes()


def _section_headers(data: bytes) -> tuple[int, int, int]:
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    return shoff, shentsize, shnum


@st.composite
def mutations(draw, data: bytes) -> bytes:
    blob = bytearray(data)
    shoff, shentsize, shnum = _section_headers(data)
    kind = draw(st.sampled_from(["truncate", "header", "section", "huge", "symbols", "bytes"]))
    if kind == "truncate":
        return bytes(blob[: draw(st.integers(0, len(blob) - 1))])
    if kind == "header":
        position = draw(st.integers(0, 63))
        blob[position] = draw(st.integers(0, 255))
    elif kind in ("section", "huge"):
        index = draw(st.integers(0, shnum - 1))
        field = draw(st.sampled_from([0x04, 0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38]))  # type, flags, addr, offset, size, link, info, align/entsize
        offset = shoff + index * shentsize + field
        value = draw(st.sampled_from([0, 1, 2**31, 2**32 - 1, 2**63 - 1, 2**64 - 1])) if kind == "huge" else draw(st.integers(0, 2**64 - 1))
        if field in (0x04, 0x28, 0x2C):
            struct.pack_into("<I", blob, offset, value & 0xFFFFFFFF)
        else:
            struct.pack_into("<Q", blob, offset, value)
    elif kind == "symbols":
        # scribble over the last part of the file, where .symtab and .strtab live
        start = draw(st.integers(len(blob) // 2, len(blob) - 24))
        for step in range(draw(st.integers(1, 20))):
            position = min(len(blob) - 8, start + step * 24 + draw(st.sampled_from([4, 8, 16])))
            struct.pack_into("<Q", blob, position, draw(st.sampled_from([0, 8, 2**32, 2**63 - 1, draw(st.integers(0, 2**64 - 1))])))
    else:
        for _ in range(draw(st.integers(1, 64))):
            blob[draw(st.integers(0, len(blob) - 1))] = draw(st.integers(0, 255))
    return bytes(blob)


@pytest.mark.slow
def test_malformed_elf_inputs_fail_cleanly(seed_binary, tmp_path_factory):
    directory = tmp_path_factory.mktemp("cases")
    worst = []

    @settings(max_examples=10_000, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=mutations(seed_binary))
    def case(data: bytes) -> None:
        path = directory / "case"
        path.write_bytes(data)
        started = time.monotonic()
        try:
            analyse_binary(path)
        except BinaryError as error:
            assert "\n" not in str(error) and str(path) in str(error)
        finally:
            elapsed = time.monotonic() - started
            worst.append(elapsed)
            assert elapsed < 2.0, f"took {elapsed:.2f} s"

    case()
    assert len(worst) >= 10_000 and max(worst) < 2.0
