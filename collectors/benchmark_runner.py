"""Running a benchmark suite on one build: warm-up, repetitions in random order, timeouts.

Order is randomized across benchmarks and repetitions (DataMill practice) so that slow
drifts of the machine spread over all benchmarks instead of biasing one.  A run that
crashes, hangs past its timeout, or prints no number for a regex metric is recorded as
a failed run with the reason, and the suite goes on.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from perf_selector.collectors.callgrind import TimedLoop, callgrind_command, callgrind_total, close_functions, keep_loop_parts
from perf_selector.collectors.child_processes import die_with_parent, process_alive
from perf_selector.collectors.frameworks import TEXT, framework
from perf_selector.collectors.metrics import dhat_command, dhat_totals, metric_unit, peak_rss, registered, rss_command  # noqa: F401 - metric_unit re-exported
from perf_selector.collectors.metrics import CPU_TIME as _CPU_TIME, HEAP_BYTES, INSTRUCTIONS as _INSTRUCTIONS, WALL_TIME as _WALL_TIME
from perf_selector.collectors.run_context import RunContext, remove_faketime_leftovers, tool_path

# The registered metrics' names (collectors/metrics.py), as the configuration spells them.
# A command's CPU time: user + system seconds of the benchmark process and every descendant it
# waited for (the kernel's rusage at exit).  Time spent waiting for a core that another tenant
# holds is not in it; wall time adds that wait to both sides of a pair and dilutes their ratio.
WALL_TIME, INSTRUCTIONS, CPU_TIME = _WALL_TIME.name, _INSTRUCTIONS.name, _CPU_TIME.name
OUTPUT_TAIL = 400  # characters of stderr kept with a failure


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    command: str  # with {binary}, {checkout}, {suite}
    metric: str = WALL_TIME  # a registered metric (collectors/metrics.py) | a regex with one group
    direction: str = "lower"
    repetitions: int = 5
    timeout: float = 300
    warmup: int = 1
    reuse: bool = True  # may runs of an identical binary stand for this benchmark's
    setup: str | None = None  # run before each run, unmeasured (same placeholders and context)
    # callgrind counts only inside functions matching this pattern (--toggle-collect): a
    # suite's benchmark without the set-up its binary shares with the others
    isolate: str | None = None
    output: str = TEXT  # TEXT: a regex metric reads stdout; a framework's name: a field of its report
    # under callgrind, count only the framework's timed loop (within what `isolate` lets
    # through): not what the benchmark's function prepares before it
    loop: TimedLoop | None = None

    def commands(self) -> list[str]:
        """The command and its set-up: every command line the benchmark runs."""
        return [self.command, *([self.setup] if self.setup else [])]


WARMUP_REPETITION = -1  # the repetition a warm-up run is scheduled (and stored) with


@dataclass
class Run:
    benchmark: str
    repetition: int  # 0..N-1; -1 for a warm-up run (what stores before the warmup column held)
    order: int  # position in the randomized schedule
    value: float | None
    status: str  # ok | failed
    error: str
    seconds: float
    warmup: bool = False  # a warm-up: never measured, compared or copied

    @property
    def counts(self) -> bool:
        """A measured run that succeeded: what labels compare (storage.history.measured_runs
        says the same of stored rows)."""
        return not self.warmup and self.status == "ok"


@dataclass
class SuiteResult:
    runs: list[Run]
    callgrind_files: dict[str, Path] = field(default_factory=dict)  # benchmark -> one callgrind output (instructions metric)
    child_seconds: float = 0.0  # time spent waiting for benchmark processes


def file_stem(benchmark: str) -> str:
    """A file name for a benchmark's outputs: suites' names hold '/', '<' and spaces."""
    if re.fullmatch(r"[A-Za-z0-9_.-]+", benchmark):
        return benchmark
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", benchmark)[:80]
    return f"{safe}-{hashlib.blake2b(benchmark.encode(), digest_size=4).hexdigest()}"


def run_folder_prefix() -> str:
    """Prefix of a temporary folder of runs: its owner's pid in it, so a later collection
    can sweep the folders of collectors that were killed (see sweep_run_folders)."""
    return f"selector-runs-{os.getpid()}-"


def sweep_run_folders() -> int:
    """Remove the run folders of dead processes; returns how many."""
    import shutil

    removed = 0
    for folder in Path(tempfile.gettempdir()).glob("selector-runs-*"):
        owner = folder.name.removeprefix("selector-runs-").split("-", 1)[0]
        if not owner.isdigit() or process_alive(int(owner)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


def expand(command: str, binary: Path, checkout: Path, suite: Path | None) -> list[str]:
    """The argument vector of a benchmark command with its placeholders filled in."""
    text = command.format(binary=shlex.quote(str(binary)), checkout=shlex.quote(str(checkout)),
                          suite=shlex.quote(str(suite or "")))
    return shlex.split(text)


class BenchmarkRunner:
    """Runs benchmarks of one build in a :class:`~collectors.run_context.RunContext` (the
    normalised one unless given): `binary`, `checkout` and `suite` are then the context's
    stable paths to them, which commands name and processes run from; `real_binary` is the
    file itself."""

    def __init__(
        self, benchmarks: list[BenchmarkSpec], binary: Path, checkout: Path, suite: Path | None = None,
        cpu: str | None = None, seed: int | None = None, workdir: Path | None = None, context: RunContext | None = None,
    ) -> None:
        self.benchmarks = benchmarks
        self.real_binary = Path(binary)
        self.context = context or RunContext()
        self.checkout, self.binary, self.suite = self.context.bind(Path(checkout), Path(binary),
                                                                   Path(suite) if suite else None)
        self.cpu = cpu
        self.random = random.Random(seed)
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=run_folder_prefix()))
        self.child_seconds = 0.0

    def run(self) -> SuiteResult:
        schedule = [(spec, rep) for spec in self.benchmarks for rep in range(spec.repetitions)]
        self.random.shuffle(schedule)
        warmups = [(spec, WARMUP_REPETITION) for spec in self.benchmarks for _ in range(spec.warmup)]
        self.random.shuffle(warmups)
        result = SuiteResult(runs=[])
        for order, (spec, repetition) in enumerate(warmups + schedule):
            keep = self.workdir / f"{file_stem(spec.name)}.{repetition}.callgrind" if spec.metric == INSTRUCTIONS else None
            run = self.run_once(spec, repetition, order, keep)
            result.runs.append(run)
            if keep is not None and run.counts and spec.name not in result.callgrind_files:
                result.callgrind_files[spec.name] = keep
        result.child_seconds = self.child_seconds
        return result

    def run_once(self, spec: BenchmarkSpec, repetition: int, order: int, callgrind_output: Path | None = None) -> Run:
        """One run of one benchmark; failures come back as a Run with status failed."""
        warmup = repetition == WARMUP_REPETITION
        unprepared = self.prepare(spec)
        if unprepared:
            return Run(spec.name, repetition, order, None, "failed", unprepared, 0.0, warmup=warmup)
        arguments = self.expand(spec.command)
        metric = registered(spec.metric)
        tool = metric.tool if metric is not None else None
        if tool == "callgrind":
            callgrind_output = callgrind_output or self.workdir / f"{file_stem(spec.name)}.{repetition}.callgrind"
            arguments = callgrind_command(arguments, callgrind_output, spec.isolate, spec.loop)
        elif tool == "dhat":
            callgrind_output = self.workdir / f"{file_stem(spec.name)}.{repetition}.dhat.json"
            arguments = dhat_command(arguments, callgrind_output)
        elif tool == "time":
            callgrind_output = self.workdir / f"{file_stem(spec.name)}.{repetition}.rss"
            arguments = rss_command(arguments, callgrind_output)
        if self.cpu is not None:
            arguments = [tool_path("taskset"), "-c", str(self.cpu), *arguments]
        outcome = self.execute(arguments, spec.timeout)
        failure = outcome.failure
        value = None
        if not failure:
            value, failure = self._value(spec, outcome, callgrind_output)
        return Run(spec.name, repetition, order, value, "failed" if failure else "ok", failure, outcome.seconds,
                   warmup=warmup)

    def expand(self, command: str) -> list[str]:
        """A command of this runner's benchmarks as the argument vector it runs."""
        return expand(command, self.binary, self.checkout, self.suite)

    def prepare(self, spec: BenchmarkSpec) -> str:
        """Run the benchmark's set-up, if it has one; what went wrong, or ''."""
        if not spec.setup:
            return ""
        outcome = self.execute(self.expand(spec.setup), spec.timeout)
        return f"setup failed: {outcome.failure}" if outcome.failure else ""

    def _value(self, spec: BenchmarkSpec, outcome: "_Outcome", callgrind_output: Path | None) -> tuple[float | None, str]:
        if spec.metric == WALL_TIME:
            return outcome.seconds, ""
        if spec.metric == CPU_TIME and (spec.output == TEXT or CPU_TIME not in framework(spec.output).times):
            if outcome.cpu_seconds is None:
                return None, "the kernel gave no resource usage of the benchmark process"
            return outcome.cpu_seconds, ""
        tool = getattr(registered(spec.metric), "tool", None)
        if tool == "time":
            try:
                return float(peak_rss(callgrind_output)), ""
            except (OSError, ValueError, IndexError) as error:
                return None, f"GNU time's report unreadable (is /usr/bin/time installed? Debian package time): {error}"
        if tool == "dhat":
            try:
                allocated, blocks = dhat_totals(callgrind_output)
            except (OSError, ValueError, KeyError) as error:
                return None, f"DHAT's profile unreadable: {error}"
            return float(allocated if spec.metric == HEAP_BYTES.name else blocks), ""
        if spec.metric == INSTRUCTIONS:
            try:
                loop_total = keep_loop_parts(callgrind_output, spec.loop) if spec.loop else None
                if loop_total is None and spec.loop and spec.loop.marker:  # the whole run would count the clock's iterations
                    return None, f"no timed run of the benchmark (a call of {spec.loop.finish}) was found under callgrind"
                total = float(callgrind_total(callgrind_output) if loop_total is None else loop_total)
            except (OSError, ValueError) as error:
                return None, f"callgrind output unreadable: {error}"
            if spec.isolate and not total:
                nearby = close_functions(self.real_binary, spec.isolate)
                hint = f"; functions of the binary with close names: {', '.join(nearby)}" if nearby else \
                    "; no function of the binary has a close name"
                return None, f"isolated by {spec.isolate!r}, which no executed function matched{hint}"
            return total, ""
        if spec.output != TEXT:
            return framework(spec.output).value(outcome.stdout, spec.metric, spec.name)
        match = re.search(spec.metric, outcome.stdout)
        if match is None:
            return None, f"no match for /{spec.metric}/ in the output"
        try:
            return float(match.group(1)), ""
        except ValueError:
            return None, f"/{spec.metric}/ matched {match.group(1)!r}, not a number"

    def execute(self, arguments: list[str], timeout: float) -> "_Outcome":
        """Run a process in the checkout (through the context's link, with its environment) with a
        timeout; its wall time counts as child time."""
        if self.context.settings.clock:
            remove_faketime_leftovers()  # else a process given a leftover's pid reads the real clock
        started = time.perf_counter()
        try:
            process = _AccountedPopen(
                arguments, cwd=self.checkout, env=self.context.environment(),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                start_new_session=True,  # a timeout kills everything the benchmark started
                preexec_fn=die_with_parent,  # and a killed collector kills the benchmark
            )
        except OSError as error:
            return _Outcome(0.0, "", f"cannot start {arguments[0]}: {error.strerror}")
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            seconds = time.perf_counter() - started
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            self.child_seconds += time.perf_counter() - started
            return _Outcome(timeout, "", f"timed out after {timeout:g} s")
        self.child_seconds += seconds
        text = stdout.decode("utf-8", "replace")
        if process.returncode != 0:
            detail = stderr.decode("utf-8", "replace").strip()[-OUTPUT_TAIL:]
            cause = (f"killed by {signal.Signals(-process.returncode).name}" if process.returncode < 0
                     else f"exit status {process.returncode}")
            return _Outcome(seconds, text, f"{cause}{': ' + detail.splitlines()[-1] if detail else ''}")
        return _Outcome(seconds, text, "", process.cpu_seconds)


@dataclass
class _Outcome:
    seconds: float
    stdout: str
    failure: str
    cpu_seconds: float | None = None  # user + system time of the process and the descendants it waited for


class _AccountedPopen(subprocess.Popen):
    """A Popen that reaps its child with wait4, keeping the kernel's account of the CPU time the
    child and its waited-for descendants used (os.waitpid, which Popen uses, drops it)."""

    cpu_seconds: float | None = None

    def _try_wait(self, wait_flags):  # Popen's hook around os.waitpid: the same contract, with wait4
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0  # as Popen does: waiting is disabled, the status is lost
        if pid == self.pid:
            self.cpu_seconds = usage.ru_utime + usage.ru_stime
        return pid, status


def names_checkout(spec: BenchmarkSpec) -> bool:
    """Does the command name files of the checkout (beyond the binary)?  Then it needs a built
    checkout: {checkout}, or a relative path with a directory in it (the command runs there)."""
    if any("{checkout}" in command for command in spec.commands()):
        return True
    words = [word for command in spec.commands() for word in command_words(expand(command, Path("/binary"), Path("/checkout"),
                                                                            Path("/suite")))]
    return any("/" in word and not os.path.isabs(word) for word in words)


def command_words(arguments: list[str]) -> Iterator[str]:
    """The arguments and, inside each (a shell script given to sh -c), its path-like words."""
    for argument in arguments:
        yield argument
        for word in re.split(r"[\s;&|<>()=`'\"]+", argument):
            if word and word != argument:
                yield word
        if " " in argument:
            try:
                yield from shlex.split(argument)
            except ValueError:
                pass
