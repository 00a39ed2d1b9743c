"""Bad inputs give one clear line and exit status 2, through the real command line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import compile_c
from tests.helpers import assert_one_line_error, run_selector

PROGRAM = "#include <stdio.h>\nint work(int x) { return x * 3; }\nint main(void) { printf(\"%d\\n\", work(2)); return 0; }\n"


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    return compile_c(PROGRAM, tmp_path_factory.mktemp("bin") / "prog", "-O2 -g")


def test_missing_path(tmp_path):
    assert_one_line_error(run_selector("functions", str(tmp_path / "nothing")), "no such file")


def test_directory(tmp_path):
    assert_one_line_error(run_selector("functions", str(tmp_path)), "is a directory")


def test_not_an_elf_file(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert_one_line_error(run_selector("functions", str(text)), "not an ELF file")


@pytest.mark.parametrize("keep", [20, 64, 200, 4096])
def test_truncated_elf(tmp_path, program, keep):
    truncated = tmp_path / "truncated"
    truncated.write_bytes(program.read_bytes()[:keep])
    assert_one_line_error(run_selector("functions", str(truncated)), "truncated")


def test_elf_of_another_architecture(tmp_path, program):
    data = bytearray(program.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # e_machine = EM_AARCH64
    foreign = tmp_path / "aarch64"
    foreign.write_bytes(bytes(data))
    assert_one_line_error(run_selector("functions", str(foreign)), "AARCH64", "only x86-64")


def test_32_bit_elf(tmp_path):
    source = tmp_path / "empty.s"
    source.write_text(".text\n.globl f\nf: ret\n")
    obj = tmp_path / "i386.o"
    subprocess.run(["as", "--32", "-o", str(obj), str(source)], check=True)
    assert_one_line_error(run_selector("functions", str(obj)), "ELF32")


def test_stripped_executable_gets_an_error_naming_the_fix(tmp_path, program):
    stripped = tmp_path / "stripped"
    shutil.copy(program, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    assert_one_line_error(run_selector("functions", str(stripped)), "stripped", "rebuild it with symbols")


def test_stripped_shared_library_falls_back_to_dynsym_and_says_so(tmp_path):
    library = compile_c("int exported(int x) { return x + 1; }\nstatic int hidden(int x) { return x; }\n"
                        "int other(int x) { return hidden(x) * 2; }\n", tmp_path / "libdemo.so", "-O0 -shared -fPIC")
    subprocess.run(["strip", str(library)], check=True)
    result = run_selector("functions", "--format", "json", str(library))
    assert result.returncode == 0, result.stderr
    assert "no .symtab" in result.stderr and "Build with symbols" in result.stderr
    import json

    names = {row["name"] for row in json.loads(result.stdout)}
    assert {"exported", "other"} <= names and "hidden" not in names
