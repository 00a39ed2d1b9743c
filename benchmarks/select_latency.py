"""`selector select` latency: the whole process on libpython, as a ratio to `objdump -d` on the same file.

Times `python -m perf_selector select HEAD --binary <copy of libpython> --format json` from
start to exit (Python start, imports, the model loaded, the new binary analysed, the
features built against the ancestor, the decisions printed) and `objdump -d libpython
> /dev/null`, alternating, `--rounds` times; the ratio of the medians is printed
(target: at most 1.0).  Two parts of the select process are timed in the same rounds
so the reader sees where the time goes: `python -c "import perf_selector.selector.cli"` (the start
and import cost of the command), the same with every module select goes on to import
(selection, features, the model bundle and onnxruntime; pyarrow and numpy, not
pandas), and the static analysis alone (`analyse_binary` of the same file, in this
process).

Set-up, in a temporary directory, generated directly (no builds): a git repository of
two commits with a selector.toml (3 benchmarks, callgrind profiles); a store where the
first commit, the ancestor, is fully known: its commits row, the static analysis of
libpython as its functions and objects (with DRIFTED functions given other
fingerprints and instruction counts, so that the new binary differs from it in those,
half of them reached by b1), 3 measured repetitions per benchmark and callgrind-shaped
profiles of PROFILED of libpython's functions per benchmark; HISTORY older commits
(commits rows and labels, as `collect` leaves them on other branches: select reads the
whole commits and labels tables, for the ancestor walk and the recent change rate);
and a model bundle
trained by the real code (`train_one` + `save_bundle`, the default model of `selector
train`: xgboost, pooled) on a small synthetic feature table, with the harness digests
`select` checks.  The decisions are printed, not asserted.

`select` is timed with the store's snapshots of its small tables in place (any select
or collect leaves them), and also with them deleted first (a store written before
snapshots existed, or by hand): then the whole commits and labels tables are read, a file per commit.
The ancestor's binary is stored with it and its profiles list per-instruction counts,
as a collection leaves them: select then aligns the reached changed functions block by
block (features/executed_code.py), loading both binaries.

With --baseline TREE (a checkout of another revision, e.g. `git worktree add /tmp/main
main`, with its compiled core copied in), the same select runs with that tree's code on
the same repository and store, alternating with this one's, with a bundle that tree
trains for itself (its own feature list): the ratio of the two is the change's cost.
Run: python benchmarks/select_latency.py [--rounds 3 --profiled 400 --drifted 20 --history 300 --baseline TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, libpython, median, write_frame as write  # noqa: E402

from perf_selector.collectors.build_config import commit_config  # noqa: E402
from perf_selector.collectors.builds import toolchain_version  # noqa: E402
from perf_selector.collectors.repository import Repository  # noqa: E402
from perf_selector.collectors.static_analysis import analyse_binary  # noqa: E402
from perf_selector.features.catalogue import FEATURE_NAMES  # noqa: E402
from perf_selector.models.backtest import train_one  # noqa: E402
from perf_selector.models.design import design_matrix  # noqa: E402
from perf_selector.models.bundle import save_bundle  # noqa: E402
from perf_selector.models.registry import model_spec  # noqa: E402
from perf_selector.selector.config import harness_digest, load_config  # noqa: E402
from perf_selector.storage.store import Store  # noqa: E402

BENCHMARKS = ["b1", "b2", "b3"]
# what a `selector select` process imports: the CLI and the select command's module, then (lazily) selection, features, the bundle (onnxruntime)
SELECT_IMPORTS = ("perf_selector.selector.cli, perf_selector.selector.commands.select, perf_selector.selector.selection.selection, "
                  "perf_selector.selector.selection.selection_output, perf_selector.features.builder, perf_selector.models.bundle, "
                  "perf_selector.models.design, "
                  "onnxruntime")
MODEL, SCOPE = "xgboost", "pooled"  # `selector train`'s defaults
CONFIG = """\
[project]
binary = "libpython.so"

[build]
command = "true"
{benchmarks}
[profile]
tool = "callgrind"
"""
BENCHMARK = """
[[benchmark]]
name = "{name}"
command = "{{binary}}"
metric = "instructions"
repetitions = 3
"""


def git(repository: Path, *arguments: str) -> str:
    environment = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                   "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    return subprocess.run(["git", "-C", str(repository), *arguments], check=True, capture_output=True, text=True,
                          env=environment).stdout.strip()


def make_repository(repository: Path) -> tuple[str, str]:
    """Two commits: the ancestor (README and selector.toml), then a README edit."""
    repository.mkdir()
    git(repository, "init", "-q")
    (repository / "README").write_text("a project\n")
    (repository / "selector.toml").write_text(CONFIG.format(benchmarks="".join(BENCHMARK.format(name=b) for b in BENCHMARKS)))
    git(repository, "add", "README", "selector.toml")
    git(repository, "commit", "-q", "-m", "first", "--date", "2024-01-01T00:00:00+00:00")
    first = git(repository, "rev-parse", "HEAD")
    (repository / "README").write_text("a project, edited\n")
    git(repository, "commit", "-q", "-am", "second", "--date", "2024-01-02T00:00:00+00:00")
    return first, git(repository, "rev-parse", "HEAD")


def make_store(store: Store, repository: Path, sha: str, binary: Path, profiled: int, drifted: int, seed: int = 3):
    """The ancestor, fully known: commits row, analysis, measurements, profiles."""
    rng = np.random.default_rng(seed)
    config = load_config(repository / "selector.toml")
    analysis = analyse_binary(binary)
    functions = analysis.functions.to_pandas().assign(commit=sha)
    # each benchmark reaches its own `profiled` functions
    reached = [rng.choice(len(functions), size=min(profiled, len(functions)), replace=False) for _ in BENCHMARKS]
    # the stored ancestor differs from the new binary in `drifted` functions: half of them reached by b1, half anywhere
    changed = np.unique(np.concatenate([reached[0][: drifted // 2], rng.choice(len(functions), size=drifted - drifted // 2)]))
    fingerprints = functions["fingerprint"].to_numpy(dtype=object).copy()
    fingerprints[changed] = [f"{value}-old" for value in fingerprints[changed]]
    functions["fingerprint"] = fingerprints
    instructions = functions["instructions"].to_numpy(dtype=np.int64).copy()
    instructions[changed] = np.maximum(instructions[changed] - rng.integers(-8, 12, size=len(changed)), 1)
    functions["instructions"] = instructions
    write(store, "functions", sha, functions)
    write(store, "objects", sha, analysis.objects.to_pandas().assign(commit=sha))
    commit = Repository.open(repository).commit(sha)
    write(store, "commits", sha, pd.DataFrame([{
        "sha": sha, "parents": list(commit.parents), "author_time": pd.Timestamp(commit.author_time).tz_convert("UTC"),
        "subject": commit.subject, "build_status": "ok", "build_reason": "", "build_log_tail": "", "build_seconds": 0.0,
        "build_command": config.build.command,
        "build_config": commit_config(binary, lambda: Repository.open(repository).tree_listing(sha), config.build.config_files,
                                      config.build.unaffected),
        "toolchain": toolchain_version(), "binary_sha256": store.put_binary(binary), "content_digest": "", "symbol_source": analysis.symbol_source,
        "decoder": analysis.decoder, "analysis_notes": "\n".join(analysis.notes), "functions": len(functions),
        "benchmarks_measured": len(BENCHMARKS), "run_failures": "", "profile_failures": "", "child_seconds": 0.0,
        "collected_at": datetime.now(timezone.utc),
    }]))
    runs = len(BENCHMARKS) * 3
    write(store, "measurements", sha, pd.DataFrame({
        "commit": sha, "benchmark": np.repeat(BENCHMARKS, 3), "metric": "instructions", "repetition": np.tile([0, 1, 2], len(BENCHMARKS)),
        "run_order": rng.permutation(runs), "value": rng.normal(1e9, 1e6, runs), "status": "ok", "error": "",
        "seconds": rng.uniform(0.5, 1.5, runs),
    }))
    names = functions["name"].to_numpy(dtype=object)
    rows = sum(len(r) for r in reached)
    self_instructions = rng.lognormal(12, 3, rows).astype(np.int64) + 1
    profiles = pd.DataFrame({
        "commit": sha, "benchmark": np.repeat(BENCHMARKS, [len(r) for r in reached]), "function": names[np.concatenate(reached)],
        "object": binary.name, "in_binary": True, "calls": rng.integers(1, 100_000, rows),
        "self_instructions": self_instructions,
        "inclusive_instructions": self_instructions + rng.lognormal(13, 3, rows).astype(np.int64),
        "samples": pd.array([pd.NA] * rows, dtype="Int64"), "profiler": "callgrind", "event": "Ir",
        # one executed instruction per function, at its entry: enough for select to align its blocks
        "instruction_addresses": [[int(a)] for a in functions["address"].to_numpy()[np.concatenate(reached)]],
        "instruction_counts": [[int(c)] for c in self_instructions],
    })
    allocator = pd.DataFrame({
        "commit": sha, "benchmark": BENCHMARKS, "function": "malloc", "object": "libc.so.6", "in_binary": False,
        "calls": rng.integers(1_000, 100_000, len(BENCHMARKS)), "self_instructions": 10**6, "inclusive_instructions": 10**6,
        "samples": pd.array([pd.NA] * len(BENCHMARKS), dtype="Int64"), "profiler": "callgrind", "event": "Ir",
        "instruction_addresses": [[] for _ in BENCHMARKS], "instruction_counts": [[] for _ in BENCHMARKS],
    })
    write(store, "profiles", sha, pd.concat([profiles, allocator], ignore_index=True))
    return config, len(analysis.functions)


def add_older_history(store: Store, ancestor: str, commits: int, seed: int = 7) -> None:
    """`commits` older commits outside HEAD's ancestry, each with its commits row and its labels."""
    rng = np.random.default_rng(seed)
    row = store.read_one("commits", ancestor).to_pandas().iloc[0]
    shas = [f"{rng.integers(2**63):016x}{i:024x}" for i in range(commits)]
    for i, sha in enumerate(shas):
        older = row.copy()
        older["sha"], older["parents"], older["subject"] = sha, [shas[i - 1]] if i else [], f"older commit {i}"
        older["author_time"] = row["author_time"] - pd.Timedelta(hours=commits - i)
        write(store, "commits", sha, pd.DataFrame([older]))
        if not i:
            continue
        median_old = rng.normal(1e9, 1e6, len(BENCHMARKS))
        effect = rng.normal(0, 0.02, len(BENCHMARKS))
        write(store, "labels", sha, pd.DataFrame({
            "new": sha, "old": shas[i - 1], "benchmark": BENCHMARKS, "metric": "instructions", "hops": 1, "n_old": 3, "n_new": 3,
            "median_old": median_old, "median_new": median_old * (1 + effect), "effect": effect,
            "statistic": rng.uniform(0, 9, len(BENCHMARKS)), "p_value": rng.uniform(0, 1, len(BENCHMARKS)), "exact": False,
            "label": np.abs(effect) > 0.03, "regression": effect > 0.03, "reason": "", "alpha": 0.05, "min_effect": 0.01,
        }))


def make_bundle(store: Store, config, newest: str, tuples: int = 1000, seed: int = 5) -> float:
    """Train the default model of `selector train` on a synthetic feature table, save the bundle where select looks."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame(0.0, index=range(tuples), columns=FEATURE_NAMES)
    reached = rng.random(tuples) < 0.5
    rank = np.where(reached, 100 * rng.beta(2.0, 1.5, tuples), 0.0)
    table["changed_functions"] = rng.poisson(3, tuples)
    table["top_changed_rank_by_instructions"] = rank
    table["top_changed_rank_by_calls"] = np.where(reached, np.clip(rank + rng.normal(0, 15, tuples), 1, 100), 0.0)
    table["relevance_by_instructions"] = rank * rng.uniform(1, 3, tuples)
    table["commit_hops"] = 1.0
    table["commit_days"] = rng.exponential(0.5, tuples)
    table["benchmark_noise"] = rng.uniform(0.001, 0.01, tuples)
    table["benchmark"] = rng.choice(BENCHMARKS, tuples)
    table["hops"] = 1
    label = rng.random(tuples) < 1 / (1 + np.exp(-(-20.0 + 0.25 * rank)))  # changes in the hottest code move the benchmark
    X = design_matrix(table, FEATURE_NAMES, SCOPE, BENCHMARKS)
    fitted = train_one(model_spec(MODEL), X, label, table["hops"].to_numpy(), SCOPE, None, 0.95, 0)
    trained_on = {"commits": tuples, "tuples": tuples, "benchmarks": BENCHMARKS, "newest_commit": newest,
                  "newest_time": "2024-01-01 00:00:00+00:00", "store": str(store.location)}
    settings = {"model": MODEL, "scope": SCOPE, "target_hit_rate": 0.95, "seed": 0,
                "harness": {b: harness_digest(config, b) for b in BENCHMARKS}}
    save_bundle(Path(store.root) / "models", [fitted], list(FEATURE_NAMES), trained_on, settings, training_inputs={None: X})
    return float(label.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profiled", type=int, default=400, help="functions in each benchmark's profile of the ancestor")
    parser.add_argument("--drifted", type=int, default=20, help="profiled functions whose code differs in the new binary")
    parser.add_argument("--history", type=int, default=300, help="older stored commits, with labels, besides the ancestor")
    parser.add_argument("--binary", type=Path, default=None, help="another binary instead of libpython")
    parser.add_argument("--baseline", type=Path, help="a checkout of another revision to time side by side")
    arguments = parser.parse_args()
    subject = arguments.binary or libpython()
    with tempfile.TemporaryDirectory(prefix="select-latency-") as directory:
        root = Path(directory)
        repository, store = root / "project", Store(root / "store")
        binary = root / "libpython.so"
        shutil.copyfile(subject, binary)
        first, head = make_repository(repository)
        config, functions = make_store(store, repository, first, binary, arguments.profiled, arguments.drifted)
        add_older_history(store, first, arguments.history)
        positives = make_bundle(store, config, first)

        select = [sys.executable, "-m", "perf_selector", "select", "HEAD", "--repo", str(repository), "--store", str(store.root),
                  "--binary", str(binary), "--format", "json"]
        outputs: list[subprocess.CompletedProcess] = []

        def run_select() -> None:
            outputs.append(subprocess.run(select, capture_output=True, text=True, cwd=root))

        def run_select_without_snapshots() -> None:
            shutil.rmtree(Path(store.root) / "snapshots", ignore_errors=True)
            run_select()

        def objdump() -> None:
            subprocess.run(["objdump", "-d", str(subject)], stdout=subprocess.DEVNULL, check=True)

        def imports(modules: str) -> None:
            subprocess.run([sys.executable, "-c", f"import {modules}"], check=True, cwd=root)

        run_select()  # the snapshots any earlier select or collect leaves
        candidates = {"selector select": run_select, "objdump -d": objdump}
        if arguments.baseline:
            baseline = arguments.baseline.resolve()
            environment = {**os.environ, "PYTHONPATH": str(baseline)}
            # a checkout from before the one install namespace has top-level packages (selector, storage, ...)
            ours = "perf_selector." if (baseline / "perf_selector").is_dir() else ""
            # that tree's bundle, trained by its own code on its own feature list
            subprocess.run([sys.executable, "-c", (
                f"import sys; sys.path.insert(0, {str(baseline / 'benchmarks')!r}); import select_latency as s\n"
                f"try:\n    from {ours}storage.store import Store\n"
                f"except ImportError:  # a checkout from before the store layer\n    from {ours}selector.store import Store\n"
                f"from {ours}selector.config import load_config\n"
                f"s.make_bundle(Store({str(root / 'baseline')!r}), load_config({str(repository / 'selector.toml')!r}), {first!r})")],
                check=True, env=environment, cwd=root)
            baseline_select = [sys.executable, "-m", "perf_selector" if ours else "selector", *select[3:],
                               "--bundle", str(root / "baseline" / "models")]
            baseline_outputs: list[subprocess.CompletedProcess] = []

            def run_baseline() -> None:
                baseline_outputs.append(subprocess.run(baseline_select, capture_output=True, text=True, cwd=root, env=environment))

            candidates["select, baseline tree"] = run_baseline
        candidates |= {
                      "  select, no snapshots": run_select_without_snapshots,
                      "  import perf_selector.selector.cli (select)": lambda: imports("perf_selector.selector.cli, perf_selector.selector.commands.select"),
                      "  all imports of select": lambda: imports(SELECT_IMPORTS),
                      "  analyse_binary": lambda: analyse_binary(binary)}
        times = interleaved(candidates, arguments.rounds)

    for result in outputs:
        if result.returncode not in (0, 1):
            raise SystemExit(f"selector select exited {result.returncode}:\n{result.stderr}")
    document = json.loads(outputs[-1].stdout)
    named = sorted(b["name"] for b in document["benchmarks"])
    if named != BENCHMARKS:
        raise SystemExit(f"selector select named {named}, expected {BENCHMARKS}:\n{outputs[-1].stdout}")
    if any(b["reason"].startswith("selector failed") for b in document["benchmarks"]):  # the fallback without --strict
        raise SystemExit(f"selector select failed internally and ran everything:\n{outputs[-1].stderr}")

    if arguments.baseline:
        for result in baseline_outputs:
            if result.returncode not in (0, 1):
                raise SystemExit(f"the baseline tree's select exited {result.returncode}:\n{result.stderr}")
    theirs, ours = median(times["objdump -d"]), median(times["selector select"])
    print(f"binary         {subject} ({subject.stat().st_size / 2**20:.1f} MiB, {functions} functions)")
    print(f"set-up         ancestor {first[:10]} stored ({arguments.profiled} profiled functions x {len(BENCHMARKS)} benchmarks, "
          f"{arguments.drifted} functions changed in the new binary), {arguments.history} older commits with labels; bundle {MODEL}/{SCOPE} on a synthetic table "
          f"({positives:.0%} positive)")
    print(f"machine        {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"select said    exit {outputs[-1].returncode}; " + "; ".join(
        f"{b['name']} {b['decision']} ({b['reason']})" for b in document["benchmarks"]))
    print(f"               its own timer (inside the process, from after the imports of the CLI and the selection "
          f"module; the feature builder's and onnxruntime's imports included): {document['seconds']:.3f} s")
    print()
    print(f"{'candidate':24s} {'median s':>9s}  {'ratio to objdump':>16s}  rounds")
    for name in candidates:
        value = median(times[name])
        print(f"{name:24s} {value:9.3f}  {value / theirs:16.2f}  {', '.join(f'{t:.3f}' for t in times[name])}")
    print()
    print(f"selector select / objdump -d = {ours / theirs:.2f}  (target <= 1.0; median of {arguments.rounds} rounds)")
    paired = sorted(a / b for a, b in zip(times["selector select"], times["objdump -d"]))
    print(f"the same ratio round by round (this machine's speed changes by a third over seconds; a round runs "
          f"both back to back): median {median(paired):.2f}, from {paired[0]:.2f} to {paired[-1]:.2f}")
    rest = ours - median(times["  all imports of select"])
    print(f"select beyond its imports: about {rest:.3f} s (medians; the analysis runs on the other core during the "
          "imports, so what is left is tabulating it, reading the store and git, the features, the model, the output)")
    print(f"all imports of select = python -c 'import {SELECT_IMPORTS}'")
    if arguments.baseline:
        base = median(times["select, baseline tree"])
        paired = sorted(a / b for a, b in zip(times["selector select"], times["select, baseline tree"]))
        print(f"selector select / the same with {arguments.baseline} = {ours / base:.2f} (medians); round by round: "
              f"median {median(paired):.2f}, from {paired[0]:.2f} to {paired[-1]:.2f}")
        print("the baseline said   " + "; ".join(f"{b['name']} {b['decision']} ({b['reason']})"
                                                 for b in json.loads(baseline_outputs[-1].stdout)["benchmarks"]))


if __name__ == "__main__":
    main()
