"""Fingerprints on real gcc output: only code changes count, never address shifts."""

from __future__ import annotations

import subprocess

import pytest

from perf_selector.collectors.static_analysis import analyse_binary
from perf_selector.collectors.static_diff import diff_functions, diff_objects
from perf_selector.collectors.symbols import demangle
from tests.helpers import compile_c, program_text

CONFIGURATIONS = [("-O0", True), ("-O0", False), ("-O2", True), ("-O2", False)]


def _changes(old, new):
    """Names as people read them (demangled; a C name is its own)."""
    diff = diff_functions(old.functions, new.functions)
    return {status: {demangle(row["name"]) for row in diff if row["status"] == status} for status in ("new", "deleted", "changed")}


def _changed_objects(old, new) -> list[str]:
    return [row["name"] for row in diff_objects(old.objects, new.objects)]


@pytest.mark.parametrize(("optimization", "pie"), CONFIGURATIONS)
def test_each_scripted_commit_changes_exactly_what_it_should(sample_builds, optimization, pie):
    builds = sample_builds(optimization, pie)
    for (_, old, _), (commit, new, _) in zip(builds, builds[1:]):
        changes = _changes(old, new)
        step = commit.step
        if step.kind == "flags":
            assert changes["changed"], "a new optimization level must change some code"
            assert not changes["new"] and not changes["deleted"]
            continue
        assert changes == {"new": set(step.new), "deleted": set(step.deleted), "changed": set(step.changed)}, step.kind
        assert set(_changed_objects(old, new)) == set(step.changed_objects), step.kind


@pytest.mark.parametrize(("optimization", "pie"), CONFIGURATIONS)
def test_comment_only_commit_changes_nothing_and_top_insertion_adds_one(sample_builds, optimization, pie):
    builds = {commit.step.kind: (index, analysis) for index, (commit, analysis, _) in enumerate(sample_builds(optimization, pie))}
    listing = [analysis for _, analysis, _ in sample_builds(optimization, pie)]
    index, neutral = builds["neutral"]
    assert _changes(listing[index - 1], neutral) == {"new": set(), "deleted": set(), "changed": set()}
    index, added = builds["add-top"]
    changes = _changes(listing[index - 1], added)
    assert changes["new"] == {"clamp_value"} and changes["changed"] == set()
    # The insertion really moved the code after it: the test would be empty otherwise.
    before = listing[index - 1].functions.to_pandas().set_index("name")["address"]
    after = added.functions.to_pandas().set_index("name")["address"]
    assert (before["print_usage"] != after["print_usage"]) or (before["main"] != after["main"])


def test_data_only_change_is_seen_in_data_objects_not_code(sample_builds):
    builds = sample_builds("-O2", True)
    index = next(i for i, (commit, _, _) in enumerate(builds) if commit.step.kind == "data")
    old, new = builds[index - 1][1], builds[index][1]
    assert _changes(old, new)["changed"] == set()
    assert _changed_objects(old, new) == ["weights"]
    reader = new.functions.to_pandas().set_index("name").loc["weighted_work"]
    assert "weights" in list(reader["data_refs"])


def test_records_carry_callees_sizes_and_instruction_counts(sample_builds):
    _, analysis, binary = sample_builds("-O2", True)[0]
    functions = analysis.functions.to_pandas().set_index("name")
    main = functions.loc["main"]
    assert {"checksum", "insertion_sort", "fib", "weighted_work", "print_usage"} <= set(main["callees"])
    assert any(callee.endswith("@plt") for callee in main["callees"])  # libc calls through the PLT
    objdump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True).stdout
    body = objdump.split("<checksum>:\n", 1)[1].split("\n\n", 1)[0]
    end = functions.loc["checksum", "address"] + functions.loc["checksum", "size"]
    addresses = [int(line.split(":")[0], 16) for line in body.splitlines() if line.strip()]
    # objdump also lists the alignment padding after the symbol's end: not part of the function
    assert functions.loc["checksum", "instructions"] == len([a for a in addresses if a < end])
    assert functions.loc["checksum", "size"] > 0


SPLIT_PROGRAM = program_text("split.c")
EXTRA_FUNCTION = "int added_first(int v) { return v * 7 + 1; }\n"


@pytest.mark.parametrize("pie", [True, False])
def test_clones_and_cold_parts_fold_into_parent_and_jump_tables_survive_shifts(tmp_path, pie):
    flags = "-O2 " + ("-fPIE -pie" if pie else "-fno-pie -no-pie")
    old = analyse_binary(compile_c(SPLIT_PROGRAM % "", tmp_path / "old", flags))
    new = analyse_binary(compile_c(SPLIT_PROGRAM % EXTRA_FUNCTION, tmp_path / "new", flags))
    functions = old.functions.to_pandas().set_index("name")
    cold = functions[functions["has_cold_part"]]
    assert len(cold), "gcc -O2 splits unlikely paths of this program into .cold parts"
    assert all(any(part.endswith(".cold") for part in parts) for parts in cold["parts"])
    assert "scale.constprop.0" in functions.loc["scale", "parts"]
    assert not any("." in name for name in functions.index if not name.startswith("_"))
    assert _changes(old, new) == {"new": {"added_first"}, "deleted": set(), "changed": set()}
    edited = analyse_binary(compile_c((SPLIT_PROGRAM % "").replace("x ^ 19", "x ^ 29"), tmp_path / "edited", flags))
    assert _changes(old, edited) == {"new": set(), "deleted": set(), "changed": {"dispatch"}}


CPP_PROGRAM = program_text("classes.cpp")


@pytest.mark.parametrize("optimization", ["-O0", "-O2"])
def test_cpp_names_are_mangled_keys_that_demangle_and_only_the_edited_method_changes(tmp_path, optimization):
    flags = f"{optimization} -fPIE -pie"
    old = analyse_binary(compile_c(CPP_PROGRAM % "", tmp_path / "old", flags, "g++", "cpp"))
    keys = set(old.functions["name"].to_pylist())
    assert {"_ZNK3geo6Square4areaEv", "_ZN3geo6scaledEd", "_ZN3geo6scaledEi"} <= keys
    names = {demangle(key) for key in keys}
    assert {"geo::Square::area() const", "geo::scaled(double)", "geo::scaled(int)"} <= names
    assert "double geo::total<double>(std::vector<double, std::allocator<double> > const&)" in names
    assert "_ZNK3geo6Square4areaEv" in set(old.functions["raw_name"].to_pylist())
    shifted = analyse_binary(compile_c(CPP_PROGRAM % "int helper_first(int v) { return v + 1; }", tmp_path / "shifted", flags, "g++", "cpp"))
    assert _changes(old, shifted) == {"new": {"geo::helper_first(int)"}, "deleted": set(), "changed": set()}
    edited_source = (CPP_PROGRAM % "").replace("return side * side;", "return side * side * 1.5;")
    edited = analyse_binary(compile_c(edited_source, tmp_path / "edited", flags, "g++", "cpp"))
    # -O2 folds square.area() into main as a constant (9.0, now 13.5): main's code changed too
    assert _changes(old, edited)["changed"] == {"geo::Square::area() const"} | ({"main"} if optimization == "-O2" else set())


STATICS_PROGRAM = program_text("statics.c")


def test_object_names_are_unique_and_pointer_tables_survive_shifts(tmp_path):
    old = analyse_binary(compile_c(STATICS_PROGRAM, tmp_path / "old", "-O2 -fPIE -pie"))
    assert old.objects["name"].to_pandas().is_unique and old.functions["name"].to_pandas().is_unique
    assert {"counter#1", "counter#2", "names"} <= set(old.objects["name"].to_pylist())
    # A new string before the table moves what `names` points to, not what it holds.
    shifted_source = 'const char *banner(void) { return "a new string literal"; }\n' + STATICS_PROGRAM
    shifted = analyse_binary(compile_c(shifted_source, tmp_path / "shifted", "-O2 -fPIE -pie"))
    assert _changed_objects(old, shifted) == []
    assert _changes(old, shifted) == {"new": {"banner"}, "deleted": set(), "changed": set()}
    renamed = analyse_binary(compile_c(STATICS_PROGRAM.replace('"beta"', '"gamma"'), tmp_path / "renamed", "-O2 -fPIE -pie"))
    assert _changed_objects(old, renamed) == ["names"]


def test_parallel_analysis_gives_the_same_tables(sample_builds, monkeypatch):
    import perf_selector.collectors.python_analysis as static_analysis
    _, _, binary = sample_builds("-O2", True)[-1]
    serial = static_analysis.analyse_in_python(binary)
    monkeypatch.setattr(static_analysis, "PARALLEL_MINIMUM", 1)
    parallel = static_analysis.analyse_in_python(binary, jobs=2)
    assert serial.functions.equals(parallel.functions) and serial.objects.equals(parallel.objects)
