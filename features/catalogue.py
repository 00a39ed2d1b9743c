"""The feature catalogue: one documented function per feature.

Each feature is a function of a :class:`TupleView` (what changed between `c_o` and
`c_n`, and `c_o`'s profile of benchmark `b`) registered with :func:`feature`, which
records its name, source table and rationale; its docstring is the definition.
``docs/features.md`` is generated from this registry (``python -m features.docs``), so
the documentation cannot drift from the code.

Conventions: a function is *reached* when it belongs to the binary and `c_o`'s
profile of `b` shows it executed.  Ranks are percentiles 0-100 among reached
functions (100 = the hottest; functions that are not reached rank 0).  "Cycles" are
sampling-profile counts (perf); with a callgrind or Pin profile they are absent and
the cycles features are 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from perf_selector.features.executed_code import NO_CHANGE, ExecutedChange
from perf_selector.features.steering import NO_STEERING, Steering
from perf_selector.collectors.metrics import INSTRUCTIONS

TOP_N = 10  # "the hottest functions": how many count as hot
RECENT_LABELS = 10  # how many earlier labels of a benchmark make its recent history
LENGTH_CHANGE = 0.10  # Perphecy's ">= 10% instruction delta"
STARTUP_CALLS = 4  # "executed a few times": main, an init function, once per run or per thread
STARTUP_OWN_SHARE = 0.1  # start-up code does a sliver of the run itself (setting up its data at most): its callees do the rest
ALLOCATORS = frozenset({
    "malloc", "calloc", "realloc", "free", "mmap", "munmap", "posix_memalign", "aligned_alloc", "memalign",
    # operator new, new[], delete, delete[], sized delete: mangled as profiles and calls name them
    # (collectors.symbols: keys are symbols), and demangled as imported profiles may
    "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
    "operator new(unsigned long)", "operator new[](unsigned long)", "operator delete(void*)",
    "operator delete[](void*)", "operator delete(void*, unsigned long)",
})


@dataclass(frozen=True)
class Feature:
    name: str
    source: str  # "Sousa 1.3", "Perphecy 6.2" or "extension"
    rationale: str
    compute: Callable[["TupleView"], float]
    per_pair: bool  # depends only on (c_n, c_o), not on the benchmark: computed once per pair

    @property
    def definition(self) -> str:
        return " ".join((self.compute.__doc__ or "").split())


CATALOGUE: list[Feature] = []


def feature(name: str, source: str, rationale: str, per_pair: bool = False):
    def register(compute: Callable[["TupleView"], float]) -> Callable[["TupleView"], float]:
        CATALOGUE.append(Feature(name, source, rationale, compute, per_pair))
        return compute

    return register


# --------------------------------------------------------------------- inputs
@dataclass(eq=False)
class PairDiff:
    """Static differences between c_o and c_n, shared by all benchmarks of the pair."""

    new: np.ndarray  # codes of functions only in c_n
    deleted: np.ndarray  # codes only in c_o
    changed: np.ndarray  # codes in both with different fingerprints
    changed_old_instructions: np.ndarray  # aligned with `changed`
    changed_new_instructions: np.ndarray
    new_instructions: np.ndarray  # aligned with `new`
    deleted_instructions: np.ndarray  # aligned with `deleted`
    changed_objects: frozenset[str]
    changed_calls_allocator: bool  # a changed or new function calls malloc/free/mmap/...
    changed_allocating: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # changed codes that call one

    @cached_property
    def changed_set(self) -> frozenset[int]:
        return frozenset(self.changed.tolist())

    @cached_property
    def deleted_set(self) -> frozenset[int]:
        return frozenset(self.deleted.tolist())


@dataclass
class ProfileView:
    """c_o's profile of one benchmark, restricted to the binary's reached functions."""

    codes: np.ndarray  # sorted function codes
    calls: np.ndarray
    instructions: np.ndarray  # self (dynamic) instructions
    inclusive: np.ndarray
    cycles: np.ndarray  # perf samples, zeros without a sampling profile
    root_inclusive: float  # the largest inclusive count: the whole run
    allocator_calls: float  # calls into allocator functions (any object)
    data_refs: frozenset[str]  # data objects referenced by reached functions (c_o's static table)
    _top: dict = field(default_factory=dict, repr=False)
    # data_refs and what their stored pointers reach (asked only when an object changed: it reads c_o's binary)
    reach_data: Callable[[frozenset[str]], frozenset[str]] | None = field(default=None, repr=False)

    @cached_property
    def data_reached(self) -> frozenset[str]:
        """The data objects reached functions reference, directly or through pointers stored in data."""
        return self.data_refs if self.reach_data is None else self.reach_data(self.data_refs)

    @cached_property
    def rank_calls(self) -> np.ndarray:
        return _percentile_rank(self.calls)

    @cached_property
    def rank_instructions(self) -> np.ndarray:
        return _percentile_rank(self.instructions)

    @cached_property
    def rank_cycles(self) -> np.ndarray:
        return _percentile_rank(self.cycles)

    def top(self, metric: str) -> list[int]:
        """Codes of the TOP_N functions with the highest `metric` (ties: lower code first, which is
        the name's order: FeatureBuilder numbers functions by name)."""
        if metric not in self._top:
            values = getattr(self, metric)
            order = np.argsort(-values, kind="stable")[:TOP_N]
            self._top[metric] = self.codes[order[values[order] > 0]].tolist()
        return self._top[metric]


@dataclass
class TupleView:
    diff: PairDiff
    profile: ProfileView
    hops: int
    days: float
    build_config_changed: bool
    recent_change_rate: float
    noise: float
    executed: ExecutedChange = NO_CHANGE  # the changed code weighed by c_o's instruction (or sample) counts (set by the builder)
    steering: Steering = NO_STEERING  # what the changed code decides for the code that runs after it (set by the builder)
    # 0-1 of the run's instructions (or samples) in reached functions naming a data object whose
    # contents changed (set by the builder)
    data_readers_share: float = 0.0
    # per changed reached function (changed_reached's order): False where c_o's run never went through
    # changed code of it that steers (blocks that align with no difference, what only the fingerprint
    # saw, such as a moved literal; changed blocks the run did not execute; or changed code it went
    # through that does straight-line work, Region.steers); None: no functions (set by the builder)
    code_steers: np.ndarray | None = None

    # positions of changed / deleted functions inside the profile (reached ones only)
    @cached_property
    def changed_reached(self) -> tuple[np.ndarray, np.ndarray]:
        """(index into diff.changed, index into profile) of changed functions that are reached."""
        return common_indices(self.diff.changed, self.profile.codes)

    @cached_property
    def deleted_reached(self) -> tuple[np.ndarray, np.ndarray]:
        """(index into diff.deleted, index into profile) of deleted functions that were reached."""
        return common_indices(self.diff.deleted, self.profile.codes)

    def changed_ranks(self, metric: str) -> np.ndarray:
        """Percentile ranks (0-100) by `metric` in c_o's profile of the changed functions that are
        reached, aligned with ``changed_reached``.  The profile's ranks are only computed when some
        changed function is reached: most tuples have none, and ranking is most of their cost."""
        positions = self.changed_reached[1]
        if len(positions) == 0:
            return np.zeros(0)
        return getattr(self.profile, f"rank_{metric}")[positions]

    @cached_property
    def length_change(self) -> np.ndarray:
        """Relative static instruction change of each changed function."""
        old = self.diff.changed_old_instructions.astype(float)
        return np.abs(self.diff.changed_new_instructions - old) / np.maximum(old, 1.0)


def common_indices(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in `a` and in `b` of the values both hold; both sorted and unique.
    (np.intersect1d sorts the concatenation each time; a binary search is cheaper.)"""
    if len(a) == 0 or len(b) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    positions = np.minimum(np.searchsorted(b, a), len(b) - 1)
    found = b[positions] == a
    return np.flatnonzero(found), positions[found]


def _percentile_rank(values: np.ndarray) -> np.ndarray:
    """100 x the share of reached functions with a count at most this one's; 0 when not executed."""
    if len(values) == 0:
        return np.zeros(0)
    reached = values > 0
    if not reached.any():
        return np.zeros(len(values))
    ordered = np.sort(values[reached])
    ranks = 100.0 * np.searchsorted(ordered, values, side="right") / len(ordered)
    return np.where(reached, ranks, 0.0)


def _max_or_zero(values: np.ndarray) -> float:
    return float(values.max()) if len(values) else 0.0


# ============================================================ Sousa Table 1.3
@feature("new_functions", "Sousa 1.3", "New functionality or refactoring can change overall performance.", per_pair=True)
def new_functions(t: TupleView) -> float:
    """Number of functions in c_n's binary that are not in c_o's."""
    return float(len(t.diff.new))


@feature("deleted_functions", "Sousa 1.3", "Removed functionality or refactoring can change overall performance.", per_pair=True)
def deleted_functions(t: TupleView) -> float:
    """Number of functions in c_o's binary that are not in c_n's."""
    return float(len(t.diff.deleted))


@feature("instruction_difference", "Sousa 1.3", "Executing more (or fewer) instructions changes performance.", per_pair=True)
def instruction_difference(t: TupleView) -> float:
    """Sum over all functions of the absolute change of the static instruction count
    (a new function counts all its instructions, a deleted one all it had)."""
    changed = np.abs(t.diff.changed_new_instructions - t.diff.changed_old_instructions).sum()
    return float(changed + t.diff.new_instructions.sum() + t.diff.deleted_instructions.sum())


@feature("reached_instruction_difference", "Sousa 1.3", "Instruction changes in code the benchmark runs are the ones that can show.")
def reached_instruction_difference(t: TupleView) -> float:
    """As instruction_difference, over the functions c_o's profile shows the benchmark executing
    (changed ones by their change, deleted ones by all they had)."""
    in_changed, _ = t.changed_reached
    changed = np.abs(t.diff.changed_new_instructions[in_changed] - t.diff.changed_old_instructions[in_changed]).sum()
    in_deleted, _ = t.deleted_reached
    return float(changed + t.diff.deleted_instructions[in_deleted].sum())


@feature("changed_functions", "Sousa 1.3", "A changed function means a bug fix or code improvement.", per_pair=True)
def changed_functions(t: TupleView) -> float:
    """Number of functions present in both binaries whose code (shift-invariant fingerprint) differs."""
    return float(len(t.diff.changed))


@feature("relevance_by_cycles", "Sousa 1.3", "Changing a function that takes many cycles is likely to change performance.")
def relevance_by_cycles(t: TupleView) -> float:
    """Sum of the cycle ranks (0-100) of the changed functions in c_o's profile."""
    return float(t.changed_ranks("cycles").sum())


@feature("relevance_by_calls", "Sousa 1.3", "Changing a function called very often is likely to change performance.")
def relevance_by_calls(t: TupleView) -> float:
    """Sum of the call-count ranks (0-100) of the changed functions in c_o's profile."""
    return float(t.changed_ranks("calls").sum())


@feature("relevance_by_instructions", "Sousa 1.3", "Changing a function that executes many instructions is likely to change performance.")
def relevance_by_instructions(t: TupleView) -> float:
    """Sum of the dynamic-instruction ranks (0-100) of the changed functions in c_o's profile."""
    return float(t.changed_ranks(INSTRUCTIONS.name).sum())


def _changed_in_top(t: TupleView, metric: str) -> float:
    if len(t.changed_reached[0]) == 0:  # the top functions are reached ones: no need to rank
        return 0.0
    return float(sum(code in t.diff.changed_set for code in t.profile.top(metric)))


def _deleted_in_top(t: TupleView, metric: str) -> float:
    if len(t.deleted_reached[0]) == 0:
        return 0.0
    return float(sum(code in t.diff.deleted_set for code in t.profile.top(metric)))


@feature("changed_in_top_cycles", "Sousa 1.3", "Changing one of the hottest functions is likely to change performance.")
def changed_in_top_cycles(t: TupleView) -> float:
    """How many of the TOP_N functions with the most cycles in c_o's profile changed."""
    return _changed_in_top(t, "cycles")


@feature("deleted_in_top_cycles", "Sousa 1.3", "Removing one of the hottest functions changes where time goes.")
def deleted_in_top_cycles(t: TupleView) -> float:
    """How many of the TOP_N functions with the most cycles in c_o's profile were deleted."""
    return _deleted_in_top(t, "cycles")


@feature("changed_in_top_calls", "Sousa 1.3", "Changing one of the most called functions multiplies its effect.")
def changed_in_top_calls(t: TupleView) -> float:
    """How many of the TOP_N most called functions in c_o's profile changed."""
    return _changed_in_top(t, "calls")


@feature("deleted_in_top_calls", "Sousa 1.3", "Removing one of the most called functions changes the hot path.")
def deleted_in_top_calls(t: TupleView) -> float:
    """How many of the TOP_N most called functions in c_o's profile were deleted."""
    return _deleted_in_top(t, "calls")


@feature("changed_in_top_instructions", "Sousa 1.3", "Changing one of the functions that execute the most instructions is likely to matter.")
def changed_in_top_instructions(t: TupleView) -> float:
    """How many of the TOP_N functions executing the most instructions in c_o's profile changed."""
    return _changed_in_top(t, INSTRUCTIONS.name)


@feature("deleted_in_top_instructions", "Sousa 1.3", "Removing one of the functions that execute the most instructions changes the hot path.")
def deleted_in_top_instructions(t: TupleView) -> float:
    """How many of the TOP_N functions executing the most instructions in c_o's profile were deleted."""
    return _deleted_in_top(t, INSTRUCTIONS.name)


# ========================================================= Perphecy Table 6.2
@feature("reached_functions_deleted", "Perphecy 6.2", "Deleting code the benchmark runs changes what it runs.")
def reached_functions_deleted(t: TupleView) -> float:
    """Number of deleted functions that c_o's profile shows the benchmark executing."""
    return float(len(t.deleted_reached[0]))


@feature("top_changed_rank_by_instructions", "Perphecy 6.2", "Changes in the longest-running functions matter most (Amdahl's law).")
def top_changed_rank_by_instructions(t: TupleView) -> float:
    """Highest dynamic-instruction rank (0-100) among the changed functions; 0 when none is reached."""
    return _max_or_zero(t.changed_ranks(INSTRUCTIONS.name))


@feature("top_changed_rank_by_calls", "Perphecy 6.2", "A change in a function is multiplied by how often it is called.")
def top_changed_rank_by_calls(t: TupleView) -> float:
    """Highest call-count rank (0-100) among the changed functions; 0 when none is reached."""
    return _max_or_zero(t.changed_ranks("calls"))


@feature("top_changed_rank_by_calls_big_change", "Perphecy 6.2", "As above, ignoring changes too small to matter.")
def top_changed_rank_by_calls_big_change(t: TupleView) -> float:
    """Highest call-count rank (0-100) among changed functions whose static instruction count
    changed by at least LENGTH_CHANGE (10%); 0 when none."""
    big = t.length_change[t.changed_reached[0]] >= LENGTH_CHANGE
    return _max_or_zero(t.changed_ranks("calls")[big])


@feature("top_function_length_change", "Perphecy 6.2", "A large change of a function's length suggests a large change of its work.", per_pair=True)
def top_function_length_change(t: TupleView) -> float:
    """Largest change of a changed function's static instruction count, in percent of its old count."""
    return 100.0 * _max_or_zero(t.length_change)


@feature("top_reached_function_length_change", "Perphecy 6.2", "As above, for code the benchmark runs.")
def top_reached_function_length_change(t: TupleView) -> float:
    """Largest change, in percent, of the static instruction count of a changed function the benchmark reaches."""
    return 100.0 * _max_or_zero(t.length_change[t.changed_reached[0]])


@feature("top_changed_rank_by_counter", "Perphecy 6.2", "Functions heavy in a hardware event (cycles) are where changes show.")
def top_changed_rank_by_counter(t: TupleView) -> float:
    """Highest rank (0-100) by the sampled performance-counter event (cycles, or cpu-clock where the
    machine has no counters) among the changed functions; 0 without a sampling profile."""
    return _max_or_zero(t.changed_ranks("cycles"))


# ================================================================= extensions
@feature("changed_inclusive_share", "extension", "A changed callee deep in the hot path can dominate a run although its own count is small.")
def changed_inclusive_share(t: TupleView) -> float:
    """Largest inclusive-instruction share of the whole run (0-1) among the changed reached functions."""
    if t.profile.root_inclusive <= 0:
        return 0.0
    return _max_or_zero(t.profile.inclusive[t.changed_reached[1]]) / t.profile.root_inclusive


@feature("changed_startup_share", "extension", "Start-up code that runs once and calls the rest (main, an init) steers "
         "what runs: a new call from it can switch a mode the whole run follows, while its own executed share is nil.")
def changed_startup_share(t: TupleView) -> float:
    """Largest inclusive-instruction share of the whole run (0-1) among the changed reached functions
    that c_o's run called at most STARTUP_CALLS times and whose own instructions are under
    STARTUP_OWN_SHARE of the run: start-up code whose callees carry the run.  A function called once
    that does the run's work itself (an interpreter's dispatch loop) is hot code, which the executed
    share and the predicted effect weigh.  Only a function whose changed code c_o's run went through
    and that steers counts (executed_code.ran_steering_code): one whose basic blocks align with no
    difference (the fingerprint saw a literal move) did not change, a change in a branch this
    benchmark's run never took (another mode's code inlined into main) cannot steer it, and nor can
    straight-line work in the frame (reordered or added arithmetic whose values reach no branch,
    call, return or store outside the frame): the callees run as before.  Unknown where the profile
    has no per-instruction counts: then every such function counts."""
    if t.profile.root_inclusive <= 0:
        return 0.0
    positions = t.changed_reached[1]
    startup = (t.profile.calls[positions] <= STARTUP_CALLS) & (t.profile.instructions[positions] < STARTUP_OWN_SHARE
                                                               * t.profile.root_inclusive)
    if t.code_steers is not None:
        startup &= t.code_steers
    few = positions[startup]
    return _max_or_zero(t.profile.inclusive[few]) / t.profile.root_inclusive


@feature("changed_data_reached", "extension", "Perphecy's open data-dependency problem: a changed table or flag the hot code reads.")
def changed_data_reached(t: TupleView) -> float:
    """Number of data objects whose contents changed and that a reached function references, directly
    or through pointers stored in data: an object a referenced object points to, and so on (c_o's
    binary: its relocations, or the words of a fixed-address binary's objects that point into an
    object; collectors/data_pointers.py).  An interpreter reaches a class's member table through the
    class structure, a dispatcher its handlers' tables through the dispatch table."""
    if not t.diff.changed_objects:
        return 0.0
    return float(len(t.diff.changed_objects & t.profile.data_reached))


@feature("changed_data_readers_share", "extension", "Unchanged code that looks up a changed table in the hot loop moves "
         "the run though no instruction it runs changed: a generated hash table whose buckets all move when one entry is "
         "added (Berry's constant strings, which every string the run makes is looked up in).")
def changed_data_readers_share(t: TupleView) -> float:
    """Share (0-1) of c_o's run instructions spent in reached functions (their own instructions) that name
    a data object whose contents changed: changed_data_reached's objects, referenced by the function
    itself in c_o's binary, changed code or not.  A table the hot code indexes weighs as much as the
    code's own share; one read once at start-up (copied to the heap, unmarshalled) weighs the start-up
    code's, and one reached only through pointers stored in data weighs nothing here
    (changed_data_reached counts both).  With a perf profile it is a share of the run's samples."""
    return t.data_readers_share


@feature("build_config_changed", "extension", "New compiler flags or toolchain change all code at once.", per_pair=True)
def build_config_changed(t: TupleView) -> float:
    """1 when the toolchain or the build configuration differs between c_o and c_n: the compiler flags
    recorded in the binaries (each compile unit's DW_AT_producer), or for binaries built without
    debug information the build files the build reads; unknown (0) when only one side records flags."""
    return float(t.build_config_changed)


@feature("commit_hops", "extension", "The further apart two versions, the likelier a change.", per_pair=True)
def commit_hops(t: TupleView) -> float:
    """Number of commits from c_n back to c_o in the commit graph."""
    return float(t.hops)


@feature("commit_days", "extension", "Time apart, the other measure of distance.", per_pair=True)
def commit_days(t: TupleView) -> float:
    """Days between the author dates of c_o and c_n."""
    return float(t.days)


@feature("benchmark_recent_change_rate", "extension", "Benchmarks that changed often lately are likely to change again.")
def benchmark_recent_change_rate(t: TupleView) -> float:
    """Share of positive labels among the benchmark's last RECENT_LABELS labelled pairs whose new
    commit is not newer than c_o (known when c_n is predicted); 0 without history."""
    return float(t.recent_change_rate)


@feature("benchmark_noise", "extension", "A noisy benchmark is labelled changed more easily and detected less reliably.")
def benchmark_noise(t: TupleView) -> float:
    """Coefficient of variation of c_o's measured runs of the benchmark."""
    return float(t.noise)


@feature("allocator_calls", "extension", "Allocation-heavy benchmarks react to memory-layout and allocator changes.")
def allocator_calls(t: TupleView) -> float:
    """Calls into malloc/calloc/realloc/free/mmap/operator new/delete in c_o's profile of the benchmark."""
    return float(t.profile.allocator_calls)


@feature("changed_calls_allocator", "extension", "A changed function that allocates may change allocation behaviour.", per_pair=True)
def changed_calls_allocator(t: TupleView) -> float:
    """1 when a changed or new function of c_n calls an allocator (malloc, free, mmap, new, delete)."""
    return float(t.diff.changed_calls_allocator)


@feature("reached_changed_allocating", "extension", "A memory benchmark (peak RSS, heap bytes) changes where code that "
         "allocates and that it runs changed; a change to code that never allocates leaves it alone.")
def reached_changed_allocating(t: TupleView) -> float:
    """Number of changed functions that call an allocator (malloc, free, mmap, new, delete) directly,
    that c_o's profile shows the benchmark executing, and whose changed code the run went through
    and steers (executed_code.ran_steering_code): a new or removed call, a changed argument or
    condition, a store outside the frame.  A change in a branch the run never took, or straight-line
    work in the frame, moves neither what is allocated nor when (unknown where the profile has no
    per-instruction counts: then every such function counts)."""
    in_changed, _ = t.changed_reached
    allocating = np.isin(t.diff.changed[in_changed], t.diff.changed_allocating)
    if t.code_steers is not None:
        allocating &= t.code_steers
    return float(allocating.sum())


@feature("executed_changed_share", "extension", "Whether a change can show depends on how much of the run executes it; "
         "function-level ranks say only that a hot function changed.")
def executed_changed_share(t: TupleView) -> float:
    """Share (0-1) of c_o's run instructions executed in code that changed: the basic blocks of changed
    reached functions that do not match between c_o and c_n (registers renamed, addresses ignored),
    weighed by c_o's per-instruction counts, plus all instructions of reached functions that were
    deleted; a changed function without per-instruction counts or binaries counts whole.  With a perf
    profile it is a share of the run's samples (time, the kernel's included): the samples that landed
    in changed blocks and deleted functions over all samples of the run."""
    return t.executed.share


@feature("predicted_effect", "extension", "The size of the change in the executed code tells a 0.1% effect from a 5% one.")
def predicted_effect(t: TupleView) -> float:
    """Predicted relative change (percent) of the run's instruction count: c_o's per-instruction counts
    applied to c_n's code (a new block runs as often as the most similar old block it replaces, an
    inserted one as often as the block before it, deleted code not at all); whole functions scale
    with their static length where per-instruction counts or binaries are missing.  With a perf profile,
    of the run's samples (its time): a new block costs per instruction what its old block's
    instructions cost on average (the block's samples over its length)."""
    return 100.0 * t.executed.predicted_effect


@feature("predicted_effect_size", "extension", "Threshold rules (Perphecy's predictor) need the size without its sign.")
def predicted_effect_size(t: TupleView) -> float:
    """Absolute value of predicted_effect, in percent."""
    return abs(100.0 * t.executed.predicted_effect)


@feature("changed_writes_hot_data", "extension", "Start-up code that fills a function-pointer table or sets a parameter "
         "the hot code reads steers the whole run although it runs once: its executed share is tiny, its effect is not.")
def changed_writes_hot_data(t: TupleView) -> float:
    """Share (0-1) of c_o's run instructions spent in reached functions (their own instructions) that
    reference a writable data object which changed code of c_n stores to.  Changed code: the changed
    functions the benchmark reaches, and the new functions they call (directly or through other new
    ones); its stores are decoded in c_n's binary (RIP-relative or absolute destinations, or off a
    register loaded with an object's address in the function); the storing functions themselves are no
    readers.  Without c_n's binary every writable object the changed code references counts as written.
    With a perf profile it is a share of the run's samples."""
    return t.steering.hot_data_written_share


@feature("executed_constant_change", "extension", "A changed constant in code that ran (a loop's trip count, a buffer "
         "size, a threshold) can change the whole run while the changed instructions run once.")
def executed_constant_change(t: TupleView) -> float:
    """Largest inclusive-instruction share of the whole run (0-1) among the changed reached functions
    that hold an executed constant-only change that steers: an aligned run of changed basic blocks whose
    old and new instructions are the same but for immediates and displacements (stack-slot displacements
    and addresses excepted), whose old instructions ran in c_o's profile, and whose changed constants
    reach a decision (collectors/value_flow.py: a branch, a call's argument, a store through a pointer,
    an address, the return value); one that reaches only straight-line work or a global's store
    (changed_writes_hot_data's to judge) does not count, nor a compare's constant or a loop bound
    on no path that carries the run: one whose values end in its function's own branches, where the
    function's inclusive share times the constant's growth squared (new over old) is under
    steering.CONSTANT_REACH (1e-3); nor a compare's immediate whose ordered branch the old run's
    counts show to have gone one way only, the way the new constant still sends every value that
    went it (a limit raised over a guard the run never passed; collectors/compare_sides.py).  0
    without per-instruction counts or binaries, and with a perf profile (which has no inclusive
    counts)."""
    return t.steering.executed_constant_share


@feature("changed_field_constant_readers", "extension", "An init function that runs once sets a parameter in a heap struct "
         "(a pass count, a search depth) that the hot code reads: the changed constant's own function is cold, its readers are not.")
def changed_field_constant_readers(t: TupleView) -> float:
    """Share (0-1) of c_o's run instructions spent in reached functions (their own instructions) that read
    a struct field an executed constant-only change stores to.  The change: an aligned run of changed
    basic blocks of a changed reached function that differ only in constants (as for
    executed_constant_change, a changed literal pool entry counting as a changed constant) and whose old
    instructions ran; its stores: a plain move of a changed immediate, or of a register loaded by an
    instruction whose immediate or literal bytes changed (a changed displacement alone does not
    count), to [register + D] (not off the stack or frame pointer or
    RIP, no index), D counted from what the register held in one linear pass over the function (add,
    sub, lea and register copies followed).  Readers: the reached functions other than the changed code,
    decoded in c_o's binary, with a memory read at [register + D'] (same rules, D' not 0) whose bytes
    overlap the stored ones.  Matching by offset alone is a heuristic: another struct may hold a field
    at the same offset.  0 without per-instruction counts or binaries.  With a perf profile it is a
    share of the run's samples."""
    return t.steering.field_readers_share


@feature("changed_cpu_dispatch", "extension", "Code that checks the CPU's features picks the implementation (SIMD "
         "or not) the hot code calls: changing it changes what runs, not how often it runs.")
def changed_cpu_dispatch(t: TupleView) -> float:
    """1 when changed code (the changed functions the benchmark reaches, and the new functions they call
    directly or through other new ones) asks the CPU what it supports: it calls or reads __cpu_model,
    __cpu_features2, __cpu_indicator_init (gcc's __builtin_cpu_supports) or glibc's __cpu_features /
    __get_cpu_features / __x86_get_cpu_features / __x86_get_cpuid_feature_leaf / __x86_cpu_features,
    or (read from c_n's binary) executes cpuid or xgetbv, or is the resolver of an IFUNC symbol; else 0."""
    return float(t.steering.cpu_dispatch)



@feature("executed_steering_share", "extension", "A change whose control flow is the old one and whose changed values reach "
         "no decision does straight-line work: the old counts foretell its cost exactly, as they cannot for one that steers.")
def executed_steering_share(t: TupleView) -> float:
    """Share (0-1) of c_o's run instructions executed in changed code that steers: the changed blocks
    (as for executed_changed_share) of regions whose control flow differs from the old (a block more or
    fewer, another branch, call or return) or whose changed instructions compute a value that reaches,
    within the function, a conditional branch, an indirect jump or call, an argument the callee reads
    (collectors/argument_liveness.py; a tail call's too), the return value, a store outside the stack
    frame or a memory address (collectors/value_flow.py), unless its only change is compares'
    immediates whose ordered branches the old run's counts show to have gone one way only, the way the
    new constants still send every value that went it (collectors/compare_sides.py); plus
    reached functions that were deleted and changed functions that could not be aligned, whole.  0
    with executed_changed_share > 0: the executed change is straight-line work.  With a perf profile
    it is a share of the run's samples."""
    return t.executed.steering_share

FEATURE_NAMES = [f.name for f in CATALOGUE]
# the features of changed code that steers execution (issue 27): what runs after it, not what it runs
STEERING_FEATURES = ("changed_writes_hot_data", "executed_constant_change", "changed_cpu_dispatch",
                     "changed_field_constant_readers", "changed_startup_share")
