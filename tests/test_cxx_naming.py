"""C++ on real g++ output: a change is reported once, where the code is, under the name
people read; the tables key functions by their mangled symbols.

Template instances, inline functions that every translation unit emits (and gcc clones
in each), constructor and destructor variants, and bodies that identical code folding
gave several names: see collectors/symbols.py and collectors/analysis_tables.py.
"""

from __future__ import annotations

import json
import shutil

import pytest

from perf_selector.collectors.callgrind import callgrind_command, read_callgrind
from perf_selector.collectors.static_analysis import analyse_binary
from perf_selector.collectors.static_diff import diff_functions, diff_objects
from perf_selector.collectors.symbols import demangle, function_key, has_external_linkage, unversioned
from tests.helpers import PROGRAMS, compile_c, compile_cxx, program_text, run_selector

UNITS = PROGRAMS / "cxx_units"


def _changes(old, new) -> dict[str, set[str]]:
    diff = diff_functions(old.functions, new.functions)
    return {status: {demangle(row["name"]) for row in diff if row["status"] == status} for status in ("new", "deleted", "changed")}


def _units(tmp_path, name: str, header_edit: tuple[str, str] | None = None, flags: str = "-O2"):
    """The three translation units of tests/programs/cxx_units, the shared header edited."""
    folder = tmp_path / name
    shutil.copytree(UNITS, folder)
    if header_edit:
        header = folder / "mixing.h"
        text = header.read_text()
        assert header_edit[0] in text
        header.write_text(text.replace(*header_edit))
    return analyse_binary(compile_cxx(sorted(folder.glob("*.cpp")), folder / "program", flags))


@pytest.mark.parametrize("flags", ["-O2", "-O2 -fPIE -pie", "-O1 -fno-pie -no-pie"])
def test_a_template_instance_changed_in_a_header_is_that_instance_alone(tmp_path, flags):
    old = _units(tmp_path, "old", flags=flags)
    new = _units(tmp_path, "new", ("DOUBLE_FACTOR 2.7", "DOUBLE_FACTOR 3.7"), flags)
    assert _changes(old, new) == {"new": set(), "deleted": set(), "changed": {"mixing::Scale<double>::apply(double)"}}
    assert "_ZN6mixing5ScaleIdE5applyEd" in set(new.functions["name"].to_pylist())  # the key: the mangled symbol


def test_an_inline_function_every_unit_clones_is_one_function_changed_once(tmp_path):
    old = _units(tmp_path, "old")
    keys = old.functions["name"].to_pylist()
    mix = [row for row in old.functions.to_pylist() if row["name"] == "_ZN6mixing3mixERKNS_4PairE"]
    # gcc -O2 emits a local clone (mix.isra.0) in each of the three units and no global copy
    assert len(mix) == 1 and len(mix[0]["parts"]) == 3 and all(part.endswith(".isra.0") for part in mix[0]["parts"])
    assert not mix[0]["local"] and len(set(keys)) == len(keys)
    new = _units(tmp_path, "new", ("SALT_FACTOR 7", "SALT_FACTOR 9"))
    assert _changes(old, new) == {"new": set(), "deleted": set(), "changed": {"mixing::mix(mixing::Pair const&)"}}


FOLDED = program_text("cxx_folded.cpp")


def test_folded_bodies_count_as_changed_and_reached_under_every_name(tmp_path):
    old_binary = compile_c(FOLDED, tmp_path / "old", "-O2", "g++", "cpp")
    old = analyse_binary(old_binary)
    rows = {demangle(row["name"]): row for row in old.functions.to_pylist()}
    meter, gauge = rows["folding::Meter::reading(int) const"], rows["folding::Gauge::level(int) const"]
    # -fipa-icf kept one body for both methods: one address, two names, one fingerprint
    assert meter["address"] == gauge["address"] and meter["fingerprint"] == gauge["fingerprint"]
    new = analyse_binary(compile_c(FOLDED.replace("FACTOR 3", "FACTOR 5"), tmp_path / "new", "-O2", "g++", "cpp"))
    changed = {"folding::Meter::reading(int) const", "folding::Gauge::level(int) const"}
    assert _changes(old, new) == {"new": set(), "deleted": set(), "changed": changed}
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed: the profile half of the test needs callgrind")
    # A profiler names the folded address by one of its names, whichever: that name is a
    # changed function of the table, so the benchmark reached the change.
    import subprocess

    output = tmp_path / "callgrind.out"
    subprocess.run(callgrind_command([str(old_binary)], output), check=True, capture_output=True)
    profiled = {row["function"] for row in read_callgrind(output, old_binary).functions.to_pylist() if row["in_binary"]}
    reached = {demangle(name) for name in profiled} & changed
    assert reached, f"callgrind named the folded body by none of {changed}: {sorted(map(demangle, profiled))}"


CONSTRUCTORS = program_text("cxx_constructors.cpp")


def test_constructor_variants_merged_by_a_flag_change_are_one_changed_function(tmp_path):
    """A class with a virtual base has separate complete and base constructors (C1, C2);
    -fdeclone-ctor-dtor (part of -Os) makes both thin entries into one unified body (C4).
    (gcc 12 makes C1 an alias of C2 for every class without virtual bases, at any -O.)"""
    old = analyse_binary(compile_c(CONSTRUCTORS, tmp_path / "old", "-O2", "g++", "cpp"))
    new = analyse_binary(compile_c(CONSTRUCTORS, tmp_path / "new", "-O2 -fdeclone-ctor-dtor", "g++", "cpp"))
    changes = _changes(old, new)
    assert changes["new"] == set() and changes["deleted"] == set()
    assert {"shapes::Counted::Counted(int)", "shapes::Counted::~Counted()"} <= changes["changed"]
    constructor = [row for row in new.functions.to_pylist() if demangle(row["name"]) == "shapes::Counted::Counted(int)"]
    assert len(constructor) == 1 and constructor[0]["name"] == "_ZN6shapes7CountedC1Ei"
    assert sorted(constructor[0]["parts"]) == ["_ZN6shapes7CountedC1Ei", "_ZN6shapes7CountedC2Ei", "_ZN6shapes7CountedC4Ei"]
    destructor = [row for row in old.functions.to_pylist() if demangle(row["name"]) == "shapes::Counted::~Counted()"]
    # the deleting, complete and base destructors and the virtual thunks to two of them: one function
    assert len(destructor) == 1 and len(destructor[0]["parts"]) == 5


TEMPLATES = program_text("cxx_templates.cpp")


def test_functions_text_fits_the_width_and_json_has_the_whole_names(tmp_path):
    binary = compile_c(TEMPLATES + CONSTRUCTORS.replace("int main(", "int unused_main("), tmp_path / "program", "-O2", "g++", "cpp")
    text = run_selector("functions", str(binary), env={"COLUMNS": "100"})
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert max(map(len, lines)) <= 100
    assert "_Z" not in text.stdout  # demangled, parts included
    assert any("Ledger<" in line and "…" in line for line in lines)
    assert any(line.startswith("shapes::Counted::~Counted()") and "deleting" in line and "thunk" in line for line in lines)
    listing = json.loads(run_selector("functions", str(binary), "--format", "json").stdout)
    ledgers = [row for row in listing if row["demangled"].startswith("Ledger<")]
    assert len(ledgers) == 2 and all(len(row["demangled"]) > 150 and "…" not in row["demangled"] for row in ledgers)
    assert all(row["name"].startswith("_ZN6LedgerI") for row in ledgers)


@pytest.mark.parametrize(("raw", "key"), [
    ("_ZN3FooC2Ev", "_ZN3FooC1Ev"),  # base constructor: the complete one's key
    ("_ZN3FooD0Ev.cold", "_ZN3FooD1Ev"),  # deleting destructor, split part
    ("_ZNSt6vectorIiSaIiEEC2ERKS1_", "_ZNSt6vectorIiSaIiEEC1ERKS1_"),  # a class template's constructor
    ("_ZN7leveldb8SkipListIPKcNS_8MemTable13KeyComparatorEEC2ES4_PNS_5ArenaE",
     "_ZN7leveldb8SkipListIPKcNS_8MemTable13KeyComparatorEEC1ES4_PNS_5ArenaE"),
    ("_ZZN7leveldb6DBImpl14RecoverLogFileEmbPbPNS_11VersionEditEPmEN11LogReporterD0Ev",  # a local class's destructor
     "_ZZN7leveldb6DBImpl14RecoverLogFileEmbPbPNS_11VersionEditEPmEN11LogReporterD1Ev"),
    ("_ZTv0_n24_N6shapes7CountedD0Ev", "_ZN6shapes7CountedD1Ev"),  # virtual thunk to the deleting destructor
    ("_ZThn8_N3Foo3runEv", "_ZN3Foo3runEv"),
    ("_ZN5MyC1E3fooEv", "_ZN5MyC1E3fooEv"),  # "MyC1E" is an identifier, not a constructor
    ("_ZN3Foo2C1Ev", "_ZN3Foo2C1Ev"),  # a method named C1
    ("_ZN1AIXadL_Z1fvEEEC2Ev", "_ZN1AIXadL_Z1fvEEEC2Ev"),  # an expression argument: not read, not folded
    ("helper.constprop.0", "helper"), ("counter.2", "counter"), ("main", "main"),
])
def test_function_keys(raw, key):
    assert function_key(raw) == key


@pytest.mark.parametrize(("raw", "dropped"), [
    ("_ZN8nlohmann16json_abi_v3_11_210basic_jsonIvE5parseEv", "_ZN8nlohmann10json_abi_v10basic_jsonIvE5parseEv"),
    ("_ZN3fmt3v106detail4dumpEv", "_ZN3fmt1v6detail4dumpEv"),  # {fmt}'s v10
    ("_ZNK3fmt2v96detail4dumpEv", "_ZNK3fmt1v6detail4dumpEv"),  # a const member: N, then K
    ("_ZNSt6vectorIN8nlohmann16json_abi_v3_11_210basic_jsonIvEESaIS3_EE9push_backEOS3_",  # in template arguments
     "_ZNSt6vectorIN8nlohmann10json_abi_v10basic_jsonIvEESaIS3_EE9push_backEOS3_"),
    ("_ZTIN8nlohmann21json_abi_diag_v3_11_26detail9exceptionE", "_ZTIN8nlohmann15json_abi_diag_v6detail9exceptionE"),
    ("_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_N8nlohmann12json_v3_11_0"
     "10basic_jsonIvEEESt10_Select1stISA_ESt4lessIS5_ESaISA_EE8_M_eraseEPSt13_Rb_tree_nodeISA_E",  # after a substitution
     "_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_N8nlohmann6json_v"
     "10basic_jsonIvEEESt10_Select1stISA_ESt4lessIS5_ESaISA_EE8_M_eraseEPSt13_Rb_tree_nodeISA_E"),
    ("_ZN3lib3fooILi16EN3fmt2v96detail3bufEEEvv", "_ZN3lib3fooILi16EN3fmt1v6detail3bufEEEvv"),  # a literal's digits are no length
    ("_ZN3lib2v9IXLi16EEE3fooEv", "_ZN3lib2v9IXLi16EEE3fooEv"),  # a class template v9<16>: no namespace
    ("_ZN4absl12lts_2024011613base_internal8SpinLock4LockEv", "_ZN4absl4lts_13base_internal8SpinLock4LockEv"),
    ("_ZN3foo2v2Ev", "_ZN3foo2v2Ev"),  # a method named v2: the last component, not a namespace
    ("_Z2v23foo", "_Z2v23foo"),  # a function v2(foo): no nested name
    ("_ZN9Header_v23getEv", "_ZN9Header_v23getEv"),  # a class of one version number: Header_v1 and _v2 side by side
    ("_ZN3lib2v9L6helperEv", "_ZN3lib1vL6helperEv"),  # an internal-linkage function in it
    ("codec_v2_1", "codec_v2_1"), ("main", "main"),  # C names are their own keys
])
def test_a_versioned_namespace_loses_its_version(raw, dropped):
    assert unversioned(raw) == dropped and function_key(raw) == dropped
    assert demangle(dropped) != dropped or not dropped.startswith("_Z")  # still a name the demangler reads


VERSIONED = program_text("cxx_versioned.cpp")


def _versioned(tmp_path, name: str, abi: str, scale: int = 3):
    return compile_c(VERSIONED, tmp_path / name, f"-O2 -DLIB_ABI={abi} -DSCALE={scale}", "g++", "cpp")


@pytest.mark.parametrize(("old_abi", "new_abi"), [("json_abi_v3_11_2", "json_abi_v3_11_3"), ("v9", "v10")])
def test_a_release_that_renames_its_namespace_changes_only_the_code_that_changed(tmp_path, old_abi, new_abi):
    """nlohmann/json's releases rename every symbol (json_abi_v3_11_2 -> _3): before keys dropped
    the version, each release deleted every function a benchmark ran and made it anew."""
    old = analyse_binary(_versioned(tmp_path, "old", old_abi))
    renamed = analyse_binary(_versioned(tmp_path, "renamed", new_abi))
    assert _changes(old, renamed) == {"new": set(), "deleted": set(), "changed": set()}
    # std::map's tree functions of the namespace's type, and the typeinfo name of its exception
    assert any(name.startswith("_ZNSt8_Rb_tree") and "ledger" not in name for name in old.functions["name"].to_pylist())
    assert diff_objects(old.objects, renamed.objects) == []
    assert any(name.startswith("_ZTS") for name in old.objects["name"].to_pylist())
    scaled = analyse_binary(_versioned(tmp_path, "scaled", new_abi, scale=5))
    add = f"lib::{old_abi.rstrip('0123456789_')}::Ledger::add(long)"
    assert _changes(old, scaled) == {"new": set(), "deleted": set(), "changed": {add}}


def test_a_profile_names_a_versioned_function_by_its_key(tmp_path):
    """callgrind prints the demangled name with the version; the profile keys it as the table does."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    import subprocess

    binary = _versioned(tmp_path, "program", "json_abi_v3_11_2")
    keys = set(analyse_binary(binary).functions["name"].to_pylist())
    output = tmp_path / "callgrind.out"
    subprocess.run(callgrind_command([str(binary), "2000"], output), check=True, capture_output=True)
    profiled = {row["function"] for row in read_callgrind(output, binary).functions.to_pylist() if row["in_binary"]}
    add, total = "_ZN3lib10json_abi_v6Ledger3addEl", "_ZNK3lib10json_abi_v6Ledger5totalEv"
    assert {add, total} <= keys and {add, total} <= profiled


def test_external_linkage_is_told_by_the_mangled_name():
    assert has_external_linkage("_ZN6mixing3mixERKNS_4PairE")
    assert not has_external_linkage("_ZL6helperv") and not has_external_linkage("_ZN1nL6gamma_EPii")
    assert not has_external_linkage("_ZN7leveldb12_GLOBAL__N_17LRUCache5UnrefEPNS0_10LRUHandleE")
    assert not has_external_linkage("helper")  # C: a static function and a clone look alike
