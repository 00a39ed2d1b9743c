"""The store's tables, typed, in one place: each column's Arrow type and what it means.

docs/store.md is written from these (``python -m storage.schema``; a test checks the
file is current, as docs/features.md is checked against the feature catalogue).  The store
casts every table it writes to these types (:meth:`TableSchema.conform`), and a test checks
that what a collection writes is what is declared here: the same columns, of these types.  A column that holds only nulls in a file (``profiles.samples`` under callgrind), or
only empty lists (a root commit's ``parents``), is stored with Arrow's null type and conforms.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from perf_selector.collectors.metrics import INSTRUCTIONS

STRING = pa.large_string()  # pandas' string dtype, as the tables are written
STRINGS = pa.list_(pa.string())
INTS = pa.list_(pa.int64())
INT = pa.int64()
FLOAT = pa.float64()
BOOL = pa.bool_()
TIME = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    meaning: str


@dataclass(frozen=True)
class TableSchema:
    name: str
    about: str  # what one row is, where the column list alone does not say it
    columns: tuple[Column, ...]

    @property
    def arrow(self) -> pa.Schema:
        return pa.schema([pa.field(column.name, column.type) for column in self.columns])

    def conform(self, table: pa.Table) -> pa.Table:
        """`table` with each declared column it holds cast to its declared type (a DataFrame of
        Python strings arrives as `string`, of pandas' string dtype as `large_string`); columns
        Arrow could only call null stay as they are, and a column of nulls only takes the
        declared type.  A value that cannot be cast is an error."""
        declared = {column.name: column.type for column in self.columns}
        for index, field in enumerate(table.schema):
            kind = declared.get(field.name)
            if kind is not None and not _conforms(field.type, kind):
                values = table.column(index)
                # nothing but nulls (an empty table's columns come from pandas as floats): no cast needed
                typed = pa.nulls(len(values), kind) if values.null_count == len(values) else values.cast(kind)
                table = table.set_column(index, field.with_type(kind), typed)
        return table

    def mismatches(self, schema: pa.Schema) -> list[str]:
        """How a file's schema departs from this one (empty: it conforms)."""
        declared = {column.name: column.type for column in self.columns}
        found = {field.name: field.type for field in schema}
        problems = [f"{self.name}: column {name} is missing" for name in declared if name not in found]
        problems += [f"{self.name}: column {name} is not declared" for name in found if name not in declared]
        problems += [f"{self.name}.{name}: {found[name]}, declared {kind}" for name, kind in declared.items()
                     if name in found and not _conforms(found[name], kind)]
        return problems


def _conforms(found: pa.DataType, declared: pa.DataType) -> bool:
    """Equal types, or one Arrow could only call null: an all-null column, a column of empty lists."""
    if found == declared or found == pa.null():
        return True
    return pa.types.is_list(found) and pa.types.is_list(declared) and _conforms(found.value_type, declared.value_type)


_COMMIT = "commit id"
_BENCHMARK = "benchmark name (`[[benchmark]] name`)"
_REUSED = ("empty when the run happened for this commit; else the commit whose run this is a copy of (an identical "
           "binary, an exact metric: see docs/collection.md); warm-ups are not copied")

COMMITS = TableSchema("commits", "One row per commit: its build outcome, its binary's identity, and what collecting it cost.", (
    Column("sha", STRING, _COMMIT),
    Column("parents", STRINGS, "parent commit ids (merges have several)"),
    Column("author_time", TIME, "author date"),
    Column("subject", STRING, "first line of the message"),
    Column("build_status", STRING, "`ok` or `failed`"),
    Column("build_reason", STRING, "why it failed: `exit status N`, `timed out after T s`, `the build succeeded but did "
                                   "not produce BINARY`, `analysis: ...`"),
    Column("build_log_tail", STRING, "last 40 lines of the build's output"),
    Column("build_seconds", FLOAT, "build wall time"),
    Column("build_command", STRING, "`[build].command` used"),
    Column("build_config", STRING, "what built the binary: `flags:<digest>` of the compiler flags it records (each "
                                   "compile unit's DW_AT_producer, the checkout's paths and `-g` options dropped) and its "
                                   "link facts (PIE, static, needed libraries); for a binary without debug information "
                                   "`files:<digest>` of the build files (`[build].config_files`) outside `[build].unaffected`. "
                                   "Differs when the build configuration changed; digests of two kinds are not compared. "
                                   "Stores collected before hold a digest without a kind (every build file of the tree): "
                                   "reading a store replaces it with the stored binary's flags, `selector collect` "
                                   "rewrites it"),
    Column("toolchain", STRING, "first line of `cc --version` on the collecting machine"),
    Column("binary_sha256", STRING, "sha256 of the built binary (under `binaries/`)"),
    Column("content_digest", STRING, "digest of the binary's allocated sections without notes: equal for builds that "
                                     "differ only in debug information or build id"),
    Column("symbol_source", STRING, "`symtab`, or `dynsym` for a stripped shared library (exported functions only)"),
    Column("decoder", STRING, "instruction decoder used (`iced-x86`)"),
    Column("analysis_notes", STRING, "warnings of the analysis (e.g. the stripped fallback)"),
    Column("functions", INT, "number of functions found"),
    Column("benchmarks_measured", INT, "benchmarks with at least one successful measured run"),
    Column("run_failures", STRING, "one line per benchmark whose runs failed: `crash: killed by SIGSEGV`, `hang: timed "
                                   "out after 1 s`, `rate: no match for /.../ in the output`, `exit status N: <last "
                                   "stderr line>`"),
    Column("profile_failures", STRING, "one line per benchmark without a profile, with the reason"),
    Column("child_seconds", FLOAT, "wall time of the build, benchmark and profiler processes of this commit"),
    Column("benchmark_seconds", FLOAT, "wall time of its benchmark runs (warm-ups included); 0 when every run was reused"),
    Column("profile_seconds", FLOAT, "wall time of profiling (extra profiler runs, reading their output)"),
    Column("cache_hits", INT, "compilations ccache answered from its cache (0 without ccache)"),
    Column("cache_misses", INT, "compilations ccache had to run (0 without ccache)"),
    Column("build_reused_from", STRING, "the parent whose build stands for this one: the commit changed only `[build] "
                                        "unaffected` paths; empty when built"),
    Column("benchmarks_reused", INT, "benchmarks whose runs are copies of an identical binary's (see "
                                     "`measurements.reused_from`)"),
    Column("collected_at", TIME, "when the row was written"),
))

FUNCTIONS = TableSchema("functions", "One row per *function*: gcc's clones and split parts (`foo.constprop.0`, "
                        "`foo.isra.0`, `foo.part.0`, `foo.cold`) are folded into their parent `foo`, a C++ "
                        "constructor's or destructor's variants (`C1`, `C2`, `D0`, `D1`, `D2`) and virtual thunks into "
                        "one function, and the local copies of a C++ inline function or template (one in each "
                        "translation unit) into one. A body with several names (identical code folding) is a part of "
                        "each of their functions.", (
    Column("commit", STRING, _COMMIT),
    Column("name", STRING, "the key across commits: the parent symbol, mangled for C++ (the commands print it "
                           "demangled), a constructor or destructor variant as the complete-object one (`C1`, `D1`), a "
                           "versioned namespace without its version (`json_abi_v3_11_2` as `json_abi_v`, {fmt}'s `v10` as "
                           "`v`). Made unique: two static functions of one name get ` [file.c]`"),
    Column("raw_name", STRING, "parent symbol of the main part as in the symbol table"),
    Column("parts", STRINGS, "raw symbols folded into this function"),
    Column("address", INT, "address of the main part"),
    Column("size", INT, "bytes, all parts"),
    Column(INSTRUCTIONS.name, INT, "static instruction count, all parts"),
    Column("fingerprint", STRING, "128-bit digest of the code with every address replaced by what it designates "
                                  "(function, data object, PLT/GOT entry, string contents, jump-table targets): changes "
                                  "when the code changes, not when the linker moves it"),
    Column("callees", STRINGS, "functions it calls or jumps to (`name@plt` for shared-library calls)"),
    Column("data_refs", STRINGS, "data objects it references (names as in `objects`)"),
    Column("has_cold_part", BOOL, "gcc split a `.cold` part off it"),
    Column("local", BOOL, "a static (file-local) function"),
    Column("file", STRING, "source file of a static function (from the symbol table)"),
))

OBJECTS = TableSchema("objects", "One row per data object (`STT_OBJECT` symbol with a size).", (
    Column("commit", STRING, _COMMIT),
    Column("name", STRING, "symbol name (mangled for C++), numeric suffixes of static locals dropped (`counter.0` -> `counter`); "
                           "made unique like `functions.name`, static locals of one name in one file by their order "
                           "in memory (`counter#2`)"),
    Column("raw_name", STRING, "symbol name without that suffix"),
    Column("address", INT, "where it is"),
    Column("size", INT, "how large, in bytes"),
    Column("section", STRING, "`.data`, `.rodata`, `.bss`, ..."),
    Column("writable", BOOL, "in a writable section"),
    Column("fingerprint", STRING, "digest of the contents, with each pointer replaced by what it points to"),
))

MEASUREMENTS = TableSchema("measurements", "One row per benchmark run of the commit, warm-ups included.", (
    Column("commit", STRING, _COMMIT),
    Column("benchmark", STRING, _BENCHMARK),
    Column("metric", STRING, "`wall_time` (seconds), `cpu_time` (user + system seconds of the process and the "
                             "descendants it waited for), `instructions` (callgrind's total Ir), or the regex whose "
                             "group was read from stdout"),
    Column("unit", STRING, "what `value` counts: `s`, `instructions`, `as printed` for a regex, or an imported "
                           "result's own unit; runs of another metric or unit are never compared"),
    Column("repetition", INT, "0..N-1; -1 for warm-up runs"),
    Column("warmup", BOOL, "a warm-up run: never compared (labels), copied (reuse) or counted; stores written "
                           "before this column say it by repetition -1, and are read so"),
    Column("run_order", INT, "position in the randomized schedule of that commit's suite"),
    Column("value", FLOAT, "the metric; null when the run failed"),
    Column("status", STRING, "`ok` or `failed`"),
    Column("error", STRING, "why the run failed; empty when it did not"),
    Column("seconds", FLOAT, "wall time of the run"),
    Column("host", STRING, "the machine's host name, read before the suite ran"),
    Column("cpu_model", STRING, "its CPU model"),
    Column("cpus", INT, "its CPU count"),
    Column("governor", STRING, "its CPU frequency governor"),
    Column("aslr", STRING, "its address-space randomization setting"),
    Column("load_1min", FLOAT, "its one-minute load average"),
    Column("kernel", STRING, "its kernel release"),
    Column("context", STRING, "digest of the run's context (the environment's names and sizes, the paths' lengths; "
                              "collectors/run_context.py): runs of two contexts have two layouts"),
    Column("reused_from", STRING, _REUSED),
))

PROFILES = TableSchema("profiles", "One row per (benchmark, function) of the commit's profiles.", (
    Column("commit", STRING, _COMMIT),
    Column("benchmark", STRING, _BENCHMARK),
    Column("function", STRING, "normalized like `functions.name` (recursion levels `f'2`, clones and `.cold` parts "
                               "folded)"),
    Column("object", STRING, "file name of the object the function lives in (the binary, `libc.so.6`, ...)"),
    Column("in_binary", BOOL, "the function belongs to the analysed binary"),
    Column("calls", INT, "times called (callgrind, Pin)"),
    Column("self_instructions", INT, "instructions executed in the function (callgrind, Pin)"),
    Column("inclusive_instructions", INT, "instructions executed in it and its callees (callgrind)"),
    Column("samples", INT, "perf samples"),
    Column("profiler", STRING, "`callgrind` or `perf`"),
    Column("event", STRING, "`Ir` under callgrind; `cycles` or `cpu-clock` under perf (chosen by what the machine "
                            "supports)"),
    Column("count_kind", STRING, "what `instruction_counts` count, and what the run total they are a share of is "
                                 "summed from: `instructions` (executions: callgrind, Pin; the run is the sum of "
                                 "`self_instructions`) or `samples` (perf; the run is the sum of `samples`, every "
                                 "object and the kernel included); absent from stores collected before it was "
                                 "recorded, where `profiler` says it (`perf`: samples)"),
    Column("instruction_addresses", INTS, "callgrind and perf, functions of the binary: each executed (perf: sampled) "
                                          "instruction's address (as in the ELF file, whatever address a "
                                          "position-independent binary was loaded at); empty for other objects and "
                                          "Pin, and absent from stores collected before they were recorded"),
    Column("instruction_counts", INTS, "for each of those instructions, how often it ran (its own cost: "
                                       "`count_kind` instructions) or how many samples landed on it (`samples`)"),
    Column("reused_from", STRING, "as in `measurements`: the commit whose profile this is a copy of, or empty"),
))

LABELS = TableSchema("labels", "One row per (new, old, benchmark): `old` is the closest ancestor of `new` (merges "
                     "included) with measurements and a profile of the benchmark.", (
    Column("new", STRING, "the commit labelled"),
    Column("old", STRING, "its closest measured and profiled ancestor"),
    Column("benchmark", STRING, _BENCHMARK),
    Column("metric", STRING, "the benchmark's metric"),
    Column("hops", INT, "distance from new to old in the commit graph"),
    Column("n_old", INT, "successful measured runs on the old side"),
    Column("n_new", INT, "successful measured runs on the new side"),
    Column("median_old", FLOAT, "median of the old side's runs"),
    Column("median_new", FLOAT, "median of the new side's runs"),
    Column("effect", FLOAT, "(median_new - median_old) / median_old"),
    Column("statistic", FLOAT, "Mann-Whitney U, two-sided"),
    Column("p_value", FLOAT, "its p-value"),
    Column("exact", BOOL, "calibration found the metric repeatable (A/A identical, or within a tolerance of a tenth of "
                          "`min_effect`): labelled by the effect alone"),
    Column("label", BOOL, "changed: p < alpha (or the effect alone when exact) and abs(effect) >= min_effect and > "
                          "`spread`; unchanged: shown below min_effect (exact, or equivalence); null when neither can be "
                          "said: a side has no successful run, too few runs, an effect within the spread or the session "
                          "drift, borderline, or a change that did not hold in every perturbed context it was "
                          "re-measured in (the `perturbed` table)"),
    Column("regression", BOOL, "changed in the wrong direction for the benchmark's `direction`"),
    Column("reason", STRING, "the numbers behind the decision"),
    Column("spread", FLOAT, "the relative effect the run's context (environment size, path length) and the A/A "
                            "tolerance alone make, from calibration: a change must exceed it; 0 when not calibrated "
                            "(an unpaired timed label must also exceed the drift between sessions: calibration's "
                            "`session_drift`, or what pairs of identical binaries in the history show)"),
    Column("decided_by", STRING, "`exact` (the effect of a repeatable metric), `test` (Mann-Whitney and the effect), "
                                 "`equivalence` (the effect's upper bound below min_effect), `confirmation` (interleaved "
                                 "runs of both binaries in one session), `identical` (a noisy metric's two sides ran "
                                 "identical binaries on the same inputs: unchanged); empty when undecided"),
    Column("alpha", FLOAT, "the significance level used"),
    Column("min_effect", FLOAT, "the smallest effect that counts as a change"),
))

CALIBRATION = TableSchema("calibration", "One row per benchmark: its latest A/A calibration (`selector calibrate`).", (
    Column("benchmark", STRING, _BENCHMARK),
    Column("metric", STRING, "the benchmark's metric"),
    Column("commit", STRING, "the commit whose build was measured against itself"),
    Column("repetitions", INT, "runs on each side of one A/A round"),
    Column("rounds", INT, "A/A rounds"),
    Column("runs", INT, "runs in all"),
    Column("run_seconds", FLOAT, "median wall time of one run, the profiler included when the metric is its count "
                                 "(callgrind slows a program 20 to 50 times): what each repetition costs on every commit "
                                 "collected; null in calibrations stored before it was recorded"),
    Column("median", FLOAT, "median of all runs"),
    Column("cv", FLOAT, "coefficient of variation over all runs"),
    Column("exact", BOOL, "every run gave the same value: labels use the effect alone"),
    Column("tolerance", FLOAT, "(max - min) / median of the A/A runs in the normalised context: 0 when exact; up to a "
                               "tenth of min_effect the metric is near-exact and labelled by the effect alone"),
    Column("layout_spread", FLOAT, "the largest relative change of the median when only the run's context changed "
                                   "(environment size, path length; see `contexts`): measurement bias"),
    Column("spread", FLOAT, "what a label's effect must exceed, as labels compute it: max(tolerance, layout_spread) "
                            "for a count or a repeatable metric; the layout spread alone for a timed metric (its "
                            "tolerance is run-to-run scatter, which the test weighs)"),
    Column("contexts", STRING, "each perturbed context and the median's relative change under it"),
    Column("fit", BOOL, "the metric can label this benchmark: false when A/A runs of one build differ by more than "
                        "min_effect, or a timed benchmark's repetitions cannot detect min_effect"),
    Column("unfit_reason", STRING, "why not, and what to do; empty when fit"),
    Column("clock_change", FLOAT, "a count's relative growth with the clock at a quarter speed against the same clock "
                                  "library at full speed (libfaketime; each slow-clock run against the true-clock run before "
                                  "it, the least growth): beyond the tolerance, the harness loops for a time and the count is "
                                  "neither exact nor fit; "
                                  "0 when not checked (a timed metric, [run] fixed_clock, no libfaketime)"),
    Column("repetitions_needed", INT, "runs a side for the Mann-Whitney test to detect min_effect at alpha with 80% "
                                      "power given the noise (`cv`); 1 for a repeatable metric"),
    Column("false_positives", INT, "A/A rounds the labeller called a change (within a session)"),
    Column("false_positive_rate", FLOAT, "false_positives / rounds"),
    Column("session_false_positives", INT, "pairs of consecutive rounds (separate sessions) called a change: what "
                                           "labels between commits will see"),
    Column("session_false_positive_rate", FLOAT, "session_false_positives / (rounds - 1)"),
    Column("session_drift", FLOAT, "how far apart the medians of two sessions (rounds) of one build lie: the 1 - alpha "
                                   "quantile of their relative difference over every pair of rounds; a label of a noisy "
                                   "metric whose sides ran in different sessions must exceed it; 0 for a repeatable metric"),
    Column("alpha", FLOAT, "the significance level used"),
    Column("min_effect", FLOAT, "the smallest effect that counts as a change"),
    Column("measured_at", TIME, "when"),
))

CONFIRMATIONS = TableSchema("confirmations", "One row per run of an interleaved confirmation (`selector confirm`): "
                            "the stored binaries of a label's two commits run in turn (old and new in a random order "
                            "each round) in one session and one context, so drift between the days they were collected "
                            "cancels. One file per (new, old, benchmark); the label of that pair is decided from it.", (
    Column("new", STRING, "the commit labelled"),
    Column("old", STRING, "the ancestor it is labelled against"),
    Column("benchmark", STRING, _BENCHMARK),
    Column("metric", STRING, "the benchmark's metric"),
    Column("unit", STRING, "as in `measurements`"),
    Column("side", STRING, "`old` or `new`: whose binary ran"),
    Column("round", INT, "0..N-1; -1 for warm-up runs (never compared)"),
    Column("run_order", INT, "position in the session's schedule"),
    Column("value", FLOAT, "the metric; null when the run failed"),
    Column("status", STRING, "`ok` or `failed`"),
    Column("error", STRING, "why the run failed; empty when it did not"),
    Column("seconds", FLOAT, "wall time of the run"),
    Column("binary_sha256", STRING, "the stored binary that ran (`commits.binary_sha256` of the side's commit)"),
    Column("host", STRING, "the machine's host name"),
    Column("context", STRING, "digest of the run's context, as in `measurements`: one for the whole session"),
    Column("measured_at", TIME, "when the session ended"),
))

PERTURBED = TableSchema("perturbed", "One row per run of a changed label's re-measurement under a perturbed run "
                        "context (selector/collection/perturbed_labels.py; `[labels] perturbed_contexts`): the stored binaries of "
                        "the label's two commits run in turn, in one session, in each context. One file per new commit "
                        "(its pairs, each context once: collection and relabelling never run a stored one again); a "
                        "changed label stays changed only if it holds in every configured context: a count keeps its "
                        "sign and exceeds max(min_effect, spread); a noisy metric's rounds are not shown, by the paired "
                        "test, within min_effect or changed the other way.", (
    Column("new", STRING, "the commit labelled"),
    Column("old", STRING, "the ancestor it is labelled against"),
    Column("benchmark", STRING, _BENCHMARK),
    Column("metric", STRING, "the benchmark's metric"),
    Column("unit", STRING, "as in `measurements`"),
    Column("perturbation", STRING, "the context, described (`environment +61 B`, `paths +17 characters`)"),
    Column("environment_padding", INT, "bytes added to the run's environment"),
    Column("path_padding", INT, "characters added to the run's paths"),
    Column("side", STRING, "`old` or `new`: whose binary ran"),
    Column("round", INT, "0..N-1 (each round runs both sides, in a random order); -1 for warm-up runs (never compared)"),
    Column("run_order", INT, "position in the context's schedule"),
    Column("value", FLOAT, "the metric; null when the run failed"),
    Column("status", STRING, "`ok` or `failed`"),
    Column("error", STRING, "why the run failed; empty when it did not"),
    Column("seconds", FLOAT, "wall time of the run"),
    Column("binary_sha256", STRING, "the stored binary that ran (`commits.binary_sha256` of the side's commit)"),
    Column("host", STRING, "the machine's host name"),
    Column("context", STRING, "digest of the run's context, as in `measurements`"),
    Column("measured_at", TIME, "when the context's session ended"),
))

TABLES: dict[str, TableSchema] = {schema.name: schema for schema in
                                  (COMMITS, FUNCTIONS, OBJECTS, MEASUREMENTS, PROFILES, LABELS, CALIBRATION, CONFIRMATIONS,
                                   PERTURBED)}

DOCUMENT = Path(__file__).resolve().parent.parent / "docs" / "store.md"
GENERATED_MARKER = "<!-- The tables below are written by `python -m storage.schema` from storage/schema.py. -->"


def _type_name(kind: pa.DataType) -> str:
    if pa.types.is_list(kind):
        return f"list of {_type_name(kind.value_type)}"
    if pa.types.is_timestamp(kind):
        return "timestamp (UTC)"
    return {STRING: "string", pa.string(): "string", INT: "int", FLOAT: "float", BOOL: "bool"}[kind]


def render_tables() -> str:
    """The part of docs/store.md after :data:`GENERATED_MARKER`."""
    parts = []
    for schema in TABLES.values():
        rows = "\n".join(f"| {column.name} | {_type_name(column.type)} | {column.meaning} |" for column in schema.columns)
        parts.append(f"## `{schema.name}`\n{schema.about}\n\n| column | type | meaning |\n|---|---|---|\n{rows}\n")
    return "\n".join(parts)


def render(document: str) -> str:
    """`document` (docs/store.md) with its generated part written anew."""
    if GENERATED_MARKER not in document:
        raise ValueError(f"{DOCUMENT} has no marker line {GENERATED_MARKER!r}")
    return document.split(GENERATED_MARKER)[0] + GENERATED_MARKER + "\n\n" + render_tables()


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DOCUMENT
    target.write_text(render(target.read_text()))
    print(f"wrote {target}")
