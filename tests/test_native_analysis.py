"""The compiled core gives the same tables as the Python reference, on real gcc output.

Every fingerprint in a store must mean the same whichever implementation computed it:
a store collected on a machine without cargo and read on one with it (or the reverse)
would otherwise report every function as changed.
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest

from perf_selector.collectors import native_analysis
from perf_selector.collectors.errors import BinaryError
from perf_selector.collectors.python_analysis import analyse_in_python
from perf_selector.collectors.static_analysis import StaticAnalysis, analyse_binary
from tests.helpers import PROGRAMS, compile_c, compile_cxx, program_text

SPLIT_PROGRAM, CPP_PROGRAM, STATICS_PROGRAM = (program_text(name) for name in ("split.c", "classes.cpp", "statics.c"))
FOLDED, CONSTRUCTORS, TEMPLATES = (program_text(name) for name in ("cxx_folded.cpp", "cxx_constructors.cpp", "cxx_templates.cpp"))

if not native_analysis.available():
    if os.environ.get("SELECTOR_REQUIRE_NATIVE") == "1":
        pytest.fail("collectors._native is not built (is cargo on PATH when pip installs?)", pytrace=False)
    pytest.skip("collectors._native is not built (no Rust toolchain at install)", allow_module_level=True)


def assert_same_analysis(native: StaticAnalysis, reference: StaticAnalysis) -> None:
    assert native.decoder == native_analysis.DECODER_NAME
    assert (native.content_digest, native.symbol_source, native.notes) == (
        reference.content_digest, reference.symbol_source, reference.notes
    )
    assert len(native.functions) > 0
    for table in ("functions", "objects"):
        ours, theirs = getattr(native, table).to_pandas(), getattr(reference, table).to_pandas()
        assert list(ours.columns) == list(theirs.columns)
        assert len(ours) == len(theirs)
        for column in ours.columns:
            mismatched = [
                name for name, a, b in zip(ours["name"], ours[column], theirs[column])
                if (list(a) if isinstance(a, (list, tuple)) or hasattr(a, "tolist") else a)
                != (list(b) if isinstance(b, (list, tuple)) or hasattr(b, "tolist") else b)
            ]
            assert not mismatched, f"{table}.{column} differs for {mismatched[:5]}"


def both(binary: Path) -> tuple[StaticAnalysis, StaticAnalysis]:
    native = native_analysis.analyse_natively(binary)
    assert native is not None, "the core refused a binary gcc wrote"
    return native, analyse_in_python(binary)


@pytest.mark.parametrize(("optimization", "pie"), [("-O0", True), ("-O0", False), ("-O2", True), ("-O2", False)])
def test_every_scripted_build_gets_the_reference_tables(sample_builds, optimization, pie):
    for _, _, binary in sample_builds(optimization, pie):
        assert_same_analysis(*both(binary))


@pytest.mark.parametrize(
    ("source", "flags", "compiler", "extension"),
    [
        (SPLIT_PROGRAM % "", "-O2 -fPIE -pie", "gcc", "c"),  # cold parts, clones, a PIE jump table
        (SPLIT_PROGRAM % "", "-O2 -fno-pie -no-pie", "gcc", "c"),  # absolute jump table
        (STATICS_PROGRAM, "-O2 -fPIE -pie", "gcc", "c"),  # same-named statics, pointer tables
        (STATICS_PROGRAM, "-O1 -fno-pie -no-pie", "gcc", "c"),
        (CPP_PROGRAM % "", "-O2", "g++", "cpp"),  # mangled names, constructor variants
        (FOLDED, "-O2", "g++", "cpp"),  # two methods, one body (identical code folding)
        (CONSTRUCTORS, "-O2 -fdeclone-ctor-dtor", "g++", "cpp"),  # unified constructor bodies, virtual thunks
        (TEMPLATES, "-O2 -fPIC -shared", "g++", "cpp"),  # template instances in a shared library
        (program_text("cxx_versioned.cpp"), "-O2", "g++", "cpp"),  # a versioned inline namespace: keys without the version
        (program_text("source_paths.c"), "-O2 -g", "gcc", "c"),  # source paths in literals, cut to the file's name
    ],
)
def test_clones_jump_tables_statics_and_cpp_get_the_reference_tables(tmp_path, source, flags, compiler, extension):
    assert_same_analysis(*both(compile_c(source, tmp_path / "program", flags, compiler, extension)))


def test_inline_function_cloned_in_every_unit_gets_the_reference_tables(tmp_path):
    sources = sorted((PROGRAMS / "cxx_units").glob("*.cpp"))
    assert_same_analysis(*both(compile_cxx(sources, tmp_path / "program", "-O2 -fPIE -pie")))


def test_stripped_library_falls_back_to_dynsym_in_both(tmp_path):
    library = compile_c("int exported(int x) { return x + 1; }\nint other(int x) { return exported(x) * 2; }\n",
                        tmp_path / "libdemo.so", "-O2 -shared -fPIC")
    subprocess.run(["strip", str(library)], check=True)
    native, reference = both(library)
    assert native.symbol_source == "dynsym" and native.notes
    assert_same_analysis(native, reference)


def test_libpython_gets_the_reference_tables():
    """libpython: 5,000 functions, 9,000 objects, every kind of address field."""
    library = Path(sysconfig.get_config_var("LIBDIR")) / str(sysconfig.get_config_var("INSTSONAME"))
    if not library.exists():
        pytest.skip(f"no shared libpython at {library}")
    assert_same_analysis(*both(library))


def test_files_the_core_refuses_get_the_python_loaders_error(tmp_path):
    program = compile_c("int main(void) { return 0; }\n", tmp_path / "program", "-O0")
    truncated = tmp_path / "truncated"
    truncated.write_bytes(program.read_bytes()[:200])
    with pytest.raises(BinaryError, match="truncated or malformed"):
        analyse_binary(truncated)
    with pytest.raises(BinaryError, match="not an ELF file"):
        analyse_binary(tmp_path / "program.c")
