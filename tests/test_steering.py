"""Features of changed code that steers execution, on real gcc builds measured by callgrind.

tests/programs/steering.c runs a hot loop through a function-pointer table that start-up
code fills after a cpuid check; main sets the loop's trip count.  A scripted history changes
one of these at a time (each commit against its parent), plus a comment and a set-up the
benchmark never runs.  The expected values are read from the stored profile of the old
commit (callgrind's own and inclusive instruction counts), not from the code under test.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from perf_selector.collectors.block_diff import Block, align
from perf_selector.collectors.code_effects import code_effects
from perf_selector.collectors.code_image import CodeImage
from perf_selector.features.builder import FeatureBuilder
from perf_selector.features.catalogue import FEATURE_NAMES
from perf_selector.features.steering import names_cpu_features
from perf_selector.models.decision import fired_hazards
from perf_selector.storage.history import load_history
from perf_selector.storage.store import Store
from tests.helpers import compile_c
from tests.helpers.scripted_history import scripted_history, scripted_source

STEERING = ["changed_writes_hot_data", "executed_constant_change", "changed_cpu_dispatch"]
BASE = {
    "CHOOSE": "ops.step = fast ? step_mixed : step_plain;",
    "FEATURE_BIT": "bit_SSE4_2",
    "TRIP_COUNT": "20000",
    "OTHER_MODE": "ops.step = step_mixed;",
}
STEPS = [  # (name, what changes from the commit before)
    ("table", {"CHOOSE": "ops.step = fast ? step_plain : step_mixed;"}),  # start-up code writes another entry
    ("trip", {"TRIP_COUNT": "30000"}),  # main's constant: the loop runs longer
    ("dispatch", {"FEATURE_BIT": "bit_AVX"}),  # the cpuid check tests another bit
    ("comment", {"TRIP_COUNT": "30000 /* items the loop visits */"}),
    ("unreached", {"OTHER_MODE": "unsigned a, b, c, d; __get_cpuid(7, &a, &b, &c, &d); "
                                 "ops.step = (b & bit_AVX2) ? step_plain : step_mixed;"}),  # argc > 1 only
]
@pytest.fixture(scope="module")
def steered(tmp_path_factory):
    """The collected history of steering.c: (store, sha of each step by name, the feature table by step)."""
    return scripted_history(tmp_path_factory.mktemp("steering") / "project", "steering.c", BASE, STEPS)


FIELD_STEPS = [  # tests/programs/field_params.c: (name, what changes from the commit before)
    ("passes", {"PASSES": "4"}),  # make_state's constant, stored to a heap struct field walk reads: the loop runs longer
    ("comment", {"PASSES": "4 /* walks over the data */"}),
    ("seed", {"SEED": "6"}),  # main's constant, stored to a stack slot
]


@pytest.fixture(scope="module")
def parameters(tmp_path_factory):
    """The collected history of field_params.c, as `steered` is of steering.c."""
    return scripted_history(tmp_path_factory.mktemp("fields") / "project", "field_params.c", {"PASSES": "3", "SEED": "5"},
                            FIELD_STEPS)


def _profile(store: Store, sha: str) -> pd.DataFrame:
    profile = store.read_one("profiles", sha).to_pandas()
    return profile[profile["benchmark"] == "steered"]


def _own_share(store: Store, sha: str, function: str) -> float:
    """The function's own instructions over the run's (every function's own, libraries and loader included)."""
    profile = _profile(store, sha)
    return float(profile.loc[profile["function"] == function, "self_instructions"].sum() / profile["self_instructions"].sum())


def _inclusive_share(store: Store, sha: str, function: str) -> float:
    """The function's inclusive instructions over the largest inclusive count in the binary (the whole run)."""
    profile = _profile(store, sha)
    profile = profile[profile["in_binary"].astype(bool)]
    return float(profile.loc[profile["function"] == function, "inclusive_instructions"].sum()
                 / profile["inclusive_instructions"].max())


@pytest.mark.slow
def test_a_changed_table_entry_written_at_start_up_weighs_the_hot_loop_that_reads_it(steered):
    store, shas, table = steered
    row = table.loc["table"]
    # kernel is the only reached reader of `ops` besides its writer; choose_ops only reads tuning_level
    expected = _own_share(store, shas["base"], "kernel")
    assert row["changed_writes_hot_data"] == pytest.approx(expected, rel=1e-12)
    assert 20000 * 5 / _profile(store, shas["base"])["self_instructions"].sum() < expected < 1  # >= 5 instructions a turn
    assert row["executed_changed_share"] < 0.001 < row["changed_writes_hot_data"]  # ran once, steers the loop
    assert "changed_writes_hot_data" in fired_hazards(row[FEATURE_NAMES].to_numpy(float))  # hot readers: a hazard
    assert row["executed_constant_change"] == 0.0  # another function's address, not another constant
    assert row["changed_cpu_dispatch"] == 0.0  # choose_ops calls the check; the cpuid is not its own code


@pytest.mark.slow
def test_a_changed_trip_count_weighs_what_the_function_holding_it_runs(steered):
    store, shas, table = steered
    expected = _inclusive_share(store, shas["table"], "main")
    assert expected > 0.5  # main runs the loop
    row = table.loc["trip"]
    assert row["executed_constant_change"] == pytest.approx(expected, rel=1e-12)
    assert row["executed_changed_share"] < 1e-4  # `mov edi, 20000` ran once
    assert row["changed_writes_hot_data"] == 0.0 and row["changed_cpu_dispatch"] == 0.0


@pytest.mark.slow
def test_a_changed_cpuid_check_is_a_cpu_dispatch(steered):
    store, shas, table = steered
    row = table.loc["dispatch"]
    assert row["changed_cpu_dispatch"] == 1.0
    # the check's mask is a constant too, in a function that runs a few instructions once
    assert row["executed_constant_change"] == pytest.approx(_inclusive_share(store, shas["trip"], "cpu_has_feature"), rel=1e-12)
    assert 0 < row["executed_constant_change"] < 1e-3
    assert row["changed_writes_hot_data"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("step", ["comment", "unreached"])
def test_a_comment_or_code_the_benchmark_never_runs_steers_nothing(steered, step):
    _, _, table = steered
    row = table.loc[step]
    assert row["changed_functions"] == (0.0 if step == "comment" else 1.0)
    assert [row[name] for name in STEERING] == [0.0, 0.0, 0.0]


@pytest.mark.slow
def test_the_unreached_change_would_steer_if_it_ran(steered):
    """other_mode, changed in the last step, stores to the table and runs cpuid: only its
    absence from the profile keeps the features at 0."""
    store, shas, _ = steered
    binary = load_history(store).binaries(shas["unreached"])
    functions = store.read_one("functions", shas["unreached"]).to_pandas().set_index("name")
    objects = store.read_one("objects", shas["unreached"]).to_pandas().set_index("name")
    image = CodeImage.load(binary)
    effects = code_effects(image, image.function_parts(list(functions.loc["other_mode", "parts"]),
                                                       int(functions.loc["other_mode", "address"])))
    assert effects.queries_cpu and not effects.resolves_ifunc
    assert effects.written == (int(objects.loc["ops", "address"]),)
    profile = _profile(store, shas["comment"])
    assert "other_mode" not in set(profile["function"]) and "choose_ops" in set(profile["function"])


@pytest.mark.slow
def test_select_computes_the_steering_features_training_computes(steered, monkeypatch):
    """`select` loads the few commits it compares (their objects' addresses, their binaries from
    the store): the steering features it decides with are the training table's."""
    import perf_selector.features.builder  # noqa: F401 - loads the module
    from perf_selector import features
    from perf_selector.selector.config import load_config
    from perf_selector.selector.selection.selection import select

    store, shas, table = steered
    root = Path(store.root).parent
    rows = features.builder.FeatureBuilder.rows
    built = []

    def recording(self, tuples):
        built.append(rows(self, list(tuples)))
        return built[-1]

    monkeypatch.setattr(features.builder.FeatureBuilder, "rows", recording)
    names = list(features.builder.CATALOGUE)
    for step in ("table", "trip", "dispatch"):
        select(root, load_config(root / "selector.toml"), store, shas[step])
        (values,) = built[-1]
        selected = {feature.name: value for feature, value in zip(names, values)}
        assert [selected[name] for name in STEERING] == pytest.approx(table.loc[step, STEERING].tolist(), rel=1e-12)


@pytest.mark.slow
def test_without_binaries_written_objects_are_the_writable_ones_referenced(steered):
    """No binaries: the stores cannot be decoded, so every writable object the changed code
    references counts as written (choose_ops's `ops`, and the tuning_level it only reads: fill
    reads it too), and cpuid and constants cannot be seen."""
    store, shas, table = steered
    history = load_history(store)
    history.binaries = None
    tuples = pd.DataFrame({"new": [shas["table"], shas["dispatch"]], "old": [shas["base"], shas["trip"]],
                           "benchmark": "steered", "hops": 1})
    rows = FeatureBuilder(history).table(tuples)
    expected = _own_share(store, shas["base"], "kernel") + _own_share(store, shas["base"], "fill")
    assert rows.loc[0, "changed_writes_hot_data"] == pytest.approx(expected, rel=1e-12)
    assert rows.loc[0, "changed_writes_hot_data"] > table.loc["table", "changed_writes_hot_data"]
    assert rows.loc[1, "changed_cpu_dispatch"] == 0.0 and rows.loc[1, "executed_constant_change"] == 0.0


def test_a_region_that_differs_only_in_constants_says_so():
    def block(key: int, shape: int, address: int) -> Block:
        return Block(key, (address, address + 4), (key, key), shape)

    def constants_only(old: list[Block], new: list[Block]) -> list[bool]:
        return [region.constants_only for region in align(old, new)]

    entry, loop, exit_ = block(1, 1, 100), block(2, 2, 200), block(3, 3, 300)
    assert constants_only([entry, loop, exit_], [block(1, 1, 10), block(9, 2, 20), block(3, 3, 30)]) == [True]
    assert constants_only([entry, loop, exit_], [block(1, 1, 10), block(9, 8, 20), block(3, 3, 30)]) == [False]
    assert constants_only([entry, exit_], [block(1, 1, 10), block(9, 2, 20), block(3, 3, 30)]) == [False]  # inserted
    assert constants_only([entry, loop, exit_], [block(1, 1, 10), block(3, 3, 30)]) == [False]  # deleted


TABLE_FILL = """
typedef int (*fn)(int);
int f1(int x) { return x; }
fn table[16];
int params[4];
int counter;
void __attribute__((noipa)) fill(int n) { for (int i = 0; i < n; i++) table[i] = f1; params[2] = n; }
int __attribute__((noipa)) reads(int n) { return table[n & 15](n) + params[n & 3] + counter; }
int main(int argc, char **argv) { (void)argv; fill(argc); return reads(argc); }
"""


@pytest.mark.parametrize("flags", ["-O0", "-O2", "-O2 -fno-pie -no-pie", "-O3"])
def test_stores_resolve_to_the_objects_they_write(tmp_path, flags):
    """A loop filling a table (an indexed store off a register loaded with its address, or an
    absolute one) and a field store; a function that only reads writes nothing."""
    binary = compile_c(TABLE_FILL, tmp_path / "prog", flags)
    symbols = _symbols(binary)
    image = CodeImage.load(str(binary))

    def written(function: str) -> set[str]:
        effects = code_effects(image, image.function_parts([function], symbols[function][0]))
        return {_object_at(symbols, address) for address in effects.written}

    assert written("fill") == {"table", "params"}
    assert written("reads") == set()


IFUNC = """
#include <stdio.h>
static int add_plain(int a) { return a + 1; }
static int add_fast(int a) { return a + 2; }
static int (*resolve_add(void))(int) { __builtin_cpu_init(); return __builtin_cpu_supports("avx2") ? add_fast : add_plain; }
int add(int) __attribute__((ifunc("resolve_add")));
__attribute__((target_clones("avx2", "default"))) int twice(int a) { return a * 2; }
int main(void) { printf("%d %d\\n", add(1), twice(3)); return 0; }
"""


def test_ifunc_resolvers_and_cpu_feature_reads_are_dispatch(tmp_path):
    """gcc's IFUNC resolvers (written, and made by target_clones) read __cpu_model, and the
    static analysis names the function at the resolver's address by its IFUNC symbol."""
    from perf_selector.collectors.static_analysis import analyse_binary

    binary = compile_c(IFUNC, tmp_path / "prog", "-O2")
    image = CodeImage.load(str(binary))
    functions = analyse_binary(binary).functions.to_pandas().set_index("name")
    for name in ("add", "twice", "main"):
        row = functions.loc[name]
        effects = code_effects(image, image.function_parts(list(row["parts"]), int(row["address"])))
        assert effects.resolves_ifunc == (name != "main")
        assert names_cpu_features([*row["callees"], *row["data_refs"]]) == (name != "main")
    cpuid = functions.loc["__cpu_indicator_init"]
    assert code_effects(image, image.function_parts(list(cpuid["parts"]), int(cpuid["address"]))).queries_cpu


def _symbols(binary: Path) -> dict[str, tuple[int, int]]:
    """name -> (address, size) of the defined symbols, as nm prints them."""
    listing = subprocess.run(["nm", "-S", str(binary)], capture_output=True, text=True, check=True).stdout
    return {fields[3]: (int(fields[0], 16), int(fields[1], 16)) for fields in map(str.split, listing.splitlines())
            if len(fields) == 4}


def _object_at(symbols: dict[str, tuple[int, int]], address: int) -> str:
    return next(name for name, (start, size) in symbols.items() if start <= address < start + size and name != "f1")


@pytest.mark.slow
def test_a_changed_constant_stored_to_a_struct_field_weighs_the_hot_code_reading_the_field(parameters):
    """gcc stores the four parameters with one vector move of a 16-byte literal: the literal's bytes
    changed, the code did not.  walk reads `passes` at the offset the literal is stored to."""
    store, shas, table = parameters
    row = table.loc["passes"]
    assert row["changed_field_constant_readers"] == pytest.approx(_own_share(store, shas["base"], "walk"), rel=1e-12)
    assert row["changed_field_constant_readers"] > 0.5  # walk is the run
    assert row["executed_changed_share"] < 1e-4  # the literal's load and store ran once
    # the literal's change is a constant-only change of make_state, which runs a small part of the run
    assert row["executed_constant_change"] == pytest.approx(_inclusive_share(store, shas["base"], "make_state"), rel=1e-12)
    assert row["executed_constant_change"] < 0.5 < row["changed_field_constant_readers"]


@pytest.mark.slow
def test_a_comment_or_a_constant_stored_to_the_stack_reads_no_field(parameters):
    store, shas, table = parameters
    assert table.loc["comment", "changed_functions"] == 0.0
    assert table.loc["comment", "changed_field_constant_readers"] == 0.0
    seed = table.loc["seed"]
    assert seed["changed_field_constant_readers"] == 0.0  # main's `movl $6, [rsp+12]`: a stack slot
    assert seed["executed_constant_change"] == pytest.approx(_inclusive_share(store, shas["comment"], "main"), rel=1e-12)


def test_a_changed_literal_is_a_changed_constant_and_a_moved_one_no_change(tmp_path):
    """Real gcc -O2 code: the merged field initialisations load a literal pool entry; changing one
    of its constants makes a constant-only region storing to the struct's field; adding an unrelated
    literal before it (moving it) changes nothing in make_state."""
    from perf_selector.collectors.block_diff import changed_regions
    from perf_selector.collectors.code_effects import field_loads

    def build(name: str, passes: str, extra: str = "") -> tuple[CodeImage, dict[str, tuple[int, int]]]:
        source = extra + scripted_source({"PASSES": passes, "SEED": "5"}, "field_params.c")
        binary = compile_c(source, tmp_path / name, "-O2")
        return CodeImage.load(str(binary)), _symbols(binary)

    def regions(old, new, function: str):
        (old_image, old_symbols), (new_image, new_symbols) = old, new
        return changed_regions(old_image, [old_symbols[function]], new_image, [new_symbols[function]])

    three, four = build("three", "3"), build("four", "4")
    moved = build("moved", "3", "const double shift_literals[2] = {1.5, 2.5};\n"
                                "double __attribute__((noipa)) scaled(double x) { return x * 3.25 + 0.75; }\n")
    (changed,) = regions(three, four, "make_state")
    assert changed.constants_only and len(changed.fields) == 1
    (offset, size), = changed.fields
    assert size == 16  # the four unsigned parameters, stored at once
    image, symbols = three
    walk_reads = field_loads(image, [symbols["walk"]])
    assert any(offset <= read < offset + size for read, _ in walk_reads)  # `passes`
    assert regions(three, moved, "make_state") == []


def test_remembered_regions_are_the_aligned_ones_and_a_rebuilt_binary_is_aligned_afresh(tmp_path):
    """The replay's builders take a function's regions from the process's memory; what they get is
    changed_regions' answer, and a binary written again at the same path (another build) is not
    answered from the memory of the one before."""
    import os

    from perf_selector.collectors.block_diff import _remembered, changed_regions, remembered_regions

    def build(name: str, passes: str, into: Path | None = None) -> tuple[CodeImage, dict[str, tuple[int, int]]]:
        binary = compile_c(scripted_source({"PASSES": passes, "SEED": "5"}, "field_params.c"), into or tmp_path / name, "-O2")
        return CodeImage.load(str(binary)), _symbols(binary)

    def regions(align, old, new):
        (old_image, old_symbols), (new_image, new_symbols) = old, new
        return align(old_image, [old_symbols["make_state"]], new_image, [new_symbols["make_state"]])

    _remembered.cache_clear()
    three, four = build("three", "3"), build("four", "4")
    first = regions(remembered_regions, three, four)
    assert len(first) == 1 and first[0].constants_only
    assert regions(remembered_regions, three, four) is first  # remembered, not aligned again
    assert _remembered.cache_info().hits == 1
    assert [r.old_addresses.tolist() for r in first] == [r.old_addresses.tolist() for r in regions(changed_regions, three, four)]

    rebuilt = build("four", "3", into=tmp_path / "four")  # the same path, now the same code as `three`
    os.utime(tmp_path / "four", ns=(1, 1))  # even within the clock's granularity: another modification time
    assert regions(remembered_regions, three, rebuilt) == []
    assert regions(remembered_regions, three, four) is first  # the image read before the rebuild keeps its answer


def test_a_binary_rebuilt_at_the_same_path_is_read_again(tmp_path):
    """load_image keeps the few binaries a feature build compares, by the file read: a build that
    writes the path again (select on a working tree, rebuilt) is read afresh, not answered from
    the image of the binary it replaced."""
    from perf_selector.collectors.block_diff import load_image

    path = tmp_path / "program"
    compile_c("int work(int x) { return x * 3; }\nint main(void) { return work(1); }\n", path, "-O1")
    first = load_image(str(path))
    assert load_image(str(path)) is first
    compile_c("int other(int x) { return x * 5; }\nint main(void) { return other(2); }\n", path, "-O1")
    again = load_image(str(path))
    assert again is not first and again.identity != first.identity
    assert "other" in again.function_names() and "work" not in again.function_names()
    assert "work" in first.function_names()  # the image read before stays whole: the build made another file


# f stamps two globals no code reads, then calls g with a constant.  The new f first clears a
# scratch register (r10, no argument) and computes more: every register after it is numbered one
# later inside the block, so the unchanged `mov edi, 0x1000` no longer matches its old self.
MOVED_UP = """
    .text
    .globl f
    .type f, @function
f:
{body}
    call g
    ret
    .size f, .-f
    .globl g
    .type g, @function
g:
    lea (%rdi,%rdi,2), %eax
    ret
    .size g, .-g
    .globl main
    .type main, @function
main:
    sub $8, %rsp
    call f
    xor %eax, %eax
    add $8, %rsp
    ret
    .size main, .-main
    .bss
    .globl stamp_sum, stamp_xor
stamp_sum: .quad 0
stamp_xor: .quad 0
    .section .note.GNU-stack,"",@progbits
"""
OLD_STAMPS = """
    movslq %edi, %rax
    xor $0x55, %edi
    lea 0x1(%rax,%rax,4), %rax
    mov %rax, stamp_sum(%rip)
    movslq %edi, %rax
    mov $0x1000, %edi
    mov %rax, stamp_xor(%rip)
"""
NEW_STAMPS = """
    xor %r10d, %r10d
    mov %edi, %eax
    xor $0x55, %eax
    cltq
    mov %rax, stamp_xor(%rip)
    movslq %edi, %rax
    sar $7, %edi
    lea 0x1(%rax,%rax,4), %r10
    movslq %edi, %rax
    mov $0x1000, %edi
    xor %r10, %rax
    mov %rax, stamp_sum(%rip)
"""


def test_an_instruction_computing_what_it_did_is_no_changed_value_when_the_registers_renumber(tmp_path):
    """The change computes other stamps (stored to globals: changed_writes_hot_data's to judge) and
    leaves g's argument as it was.  Matched with its registers numbered by first appearance,
    `mov edi, 0x1000` seems changed, and a changed value would reach the call's argument; it
    computes, from the block's entry, what the old instruction did, so the region does straight-line
    work.  Assembled, so that no compiler's choices decide what the test sees."""
    from perf_selector.collectors.block_diff import changed_regions

    def build(name: str, body: str) -> tuple[CodeImage, tuple[int, int]]:
        binary = compile_c(MOVED_UP.format(body=body), tmp_path / name, "", extension="s")
        return CodeImage.load(str(binary)), _symbols(binary)["f"]

    (old_image, old_f), (new_image, new_f) = build("old", OLD_STAMPS), build("new", NEW_STAMPS)
    (region,) = changed_regions(old_image, [old_f], new_image, [new_f])
    assert not region.steers
    passing_image, passing_f = build("passing", NEW_STAMPS.replace("    mov $0x1000, %edi\n",
                                                                  "    mov $0x1000, %edi\n    add %r10d, %edi\n"))
    (passing,) = changed_regions(old_image, [old_f], passing_image, [passing_f])
    assert passing.steers  # the same change passing a value it computed on to g does steer
