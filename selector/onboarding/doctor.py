"""`selector doctor`: what the configuration needs, and whether this machine and the store have it.

One :class:`~selector.machine.Finding` a line, in the order a first selection needs them:
the configuration, what the build runs, the measuring and profiling tools, the install's
extras, the built program's symbols, the benchmark inputs, then the store's progress
(readable, calibrated, labels decided, a model that decides).  Every failing line says
the command that fixes it; the doctor fixes nothing itself.
"""

from __future__ import annotations

import re
from pathlib import Path

from perf_selector.collectors.frameworks import FRAMEWORKS, framework
from perf_selector.collectors.metrics import under_callgrind as metric_under_callgrind, uses_valgrind
from perf_selector.collectors.errors import UserError
from perf_selector.collectors.repository import Repository
from perf_selector.selector.config import CONFIG_NAME, Config, configured_metrics, find_config, has_benchmarks, label_rules, load_config
from perf_selector.selector.onboarding.build_recipes import PLACEHOLDER, strip_overrides
from perf_selector.selector.onboarding.build_target import build_target_finding
from perf_selector.selector.extras import install_hint, missing_modules
from perf_selector.selector.onboarding.machine import (FAIL, NOT_NEEDED, NOT_YET, OK, WARN, Finding, build_programs, ccache_finding, perf_finding,
                              program_finding, taskset_finding, valgrind_finding)
from perf_selector.selector.onboarding.survey import CXX_SUFFIXES, MAKEFILES
from perf_selector.storage.labels import near_exact

# Below this share of decided labels, training learns from too few pairs: the undecided
# ones are dropped, and a benchmark whose labels are mostly undecided is barely learnt.
DECIDED_ENOUGH = 0.9
FIRST_COLLECTION = "selector collect -n 50"


def diagnose(repository: Path, config_path: Path | None = None, store_location: str | None = None,
             binary: Path | None = None, paranoid_path: Path | None = None) -> list[Finding]:
    """Every check, in order."""
    top = Repository.open(repository).top
    try:
        path = find_config(top, config_path)
        config = load_config(path)
    except UserError as error:
        fix = f"selector init --repo {top}" if "no " + CONFIG_NAME in str(error) else f"edit {CONFIG_NAME}"
        return [Finding("configuration", FAIL, str(error), fix)]
    findings = [Finding("configuration", OK, str(path)), _benchmarks(config), *_placeholders(config)]
    store = _open_store(top, store_location)
    findings += _build_tools(top, config, _successful_builds(store))
    metrics = configured_metrics(config)
    findings += [valgrind_finding(any(uses_valgrind(metric) for metric in metrics) or config.profile.tool == "callgrind"),
                 perf_finding(config.profile.tool == "perf", paranoid_path), ccache_finding(),
                 taskset_finding(config.run.cpu), _extra("collect", "calibrate, collect", FAIL),
                 _extra("train", "train (select uses the shipped model without it)", WARN),
                 _suite_folder(path, config), *_hook(top)]
    findings += _symbols(top, config, store if not isinstance(store, Finding) else None, binary)
    if isinstance(store, Finding):
        return findings + [store, *_store_progress(None, config)]
    return findings + _store_progress(store, config)


def _hook(top: Path) -> list[Finding]:
    """The pre-push hook, said only when it needs doing again."""
    from perf_selector.selector.selection.hook import outdated_hook

    hook = outdated_hook(Repository.open(top))
    if hook is None:
        return []
    return [Finding("pre-push hook", FAIL, f"{hook} was written by an older perf-selector and runs a module this "
                    "version no longer has: every push fails", f"selector hook install --repo {top} (with the options "
                    "you gave it: --strict, --run-benchmarks, --store)")]


def _benchmarks(config: Config) -> Finding:
    if not has_benchmarks(config):
        return Finding("benchmarks", FAIL, "no [[benchmark]] or [[suite]]", f"describe them in {CONFIG_NAME} (docs/configuration.md)")
    named = [b.name for b in config.benchmark] + [f"{s.name}/* ({s.framework})" for s in config.suite]
    return Finding("benchmarks", OK, ", ".join(named))


def _placeholders(config: Config) -> list[Finding]:
    """What `init` left for the user to fill in: nothing can be built or measured until it is."""
    found = [f"[{section}] {key} = \"{value}\"" for section, key, value in
             (("project", "binary", config.project.binary), ("build", "command", config.build.command))
             if PLACEHOLDER in (value or "")]
    if not found:
        return []
    return [Finding("placeholders", FAIL, f"{'; '.join(found)}: init could not tell it",
                    f"name in {CONFIG_NAME} the program the build produces and the command that builds it "
                    "(selector init --help says what it reads)")]


def _successful_builds(store) -> int:
    """Builds the store holds that succeeded: a real build of the command, which a dry run's doubt cannot outweigh."""
    if store is None or isinstance(store, Finding):
        return 0
    from perf_selector.storage.store import StoreError

    try:
        commits = store.read("commits")
    except StoreError:  # an unreadable store is the store line's to say
        return 0
    return sum(status == "ok" for status in commits["build_status"].to_pylist()) if commits.num_rows else 0


def _build_tools(top: Path, config: Config, built: int = 0) -> list[Finding]:
    """The programs the build command runs and the compilers it names (or the build systems use),
    then whether the target it names exists (selector/onboarding/build_target.py); a dry run's warning is
    outweighed by `built` successful builds in the store."""
    tracked = Repository.open(top).git("ls-files").splitlines()
    cxx = any(name.endswith(CXX_SUFFIXES) for name in tracked)
    tools, compilers = build_programs(config.build.command, cxx)
    target = build_target_finding(top, config.build.command, tracked)
    if target is not None and target.status == WARN and built:
        target = Finding(target.check, OK, f"{built} successful builds in the store (a dry run doubted it: {target.found})")
    return [program_finding(program, f"compiler {program}") for program in compilers] + \
        [program_finding(program, "git" if program == "git" else f"build tool {program}") for program in ["git", *tools]] + \
        ([target] if target else [])


def _extra(extra: str, commands: str, status_when_missing: str) -> Finding:
    missing = missing_modules(extra)
    if missing:
        return Finding(f"the '{extra}' extra", status_when_missing, f"for {commands}: {', '.join(missing)} not installed",
                       install_hint([extra]))
    return Finding(f"the '{extra}' extra", OK, f"for {commands}")


def _suite_folder(path: Path, config: Config) -> Finding:
    """[project] suite, the benchmark inputs kept outside the history."""
    commands = [b.command for b in config.benchmark] + [s.command for s in config.suite]
    commands += [b.setup or "" for b in config.benchmark] + [s.setup or "" for s in config.suite]
    if config.project.suite is None:
        if any("{suite}" in command for command in commands):
            return Finding("suite folder", FAIL, "commands name {suite}, [project] suite is not set",
                           f"set [project] suite in {CONFIG_NAME}")
        return Finding("suite folder", NOT_NEEDED, "[project] suite is not set")
    folder = (path.parent / config.project.suite).resolve()
    if not folder.is_dir():
        return Finding("suite folder", FAIL, f"{folder}: no such folder",
                       f"make it (the benchmark inputs), or fix [project] suite in {CONFIG_NAME}")
    return Finding("suite folder", OK, f"{folder}: {sum(1 for _ in folder.rglob('*'))} files")


def _open_store(top: Path, store_location: str | None):
    """The store, or the finding that says why there is none to read."""
    from perf_selector.storage.store import FORMAT_VERSION, Store, StoreError

    location = store_location or str(top / ".selector")
    try:
        return Store(location, create=False)
    except StoreError as error:
        if "no store here" in str(error):
            return Finding("store", NOT_YET, f"{location}: not made yet",
                           "selector calibrate, then " + FIRST_COLLECTION + " (they make it)")
        return Finding("store", FAIL, str(error), "upgrade perf-selector" if "newer" in str(error) else "")
    except OSError as error:
        return Finding("store", FAIL, f"{location}: {error}", f"check the store's permissions (format {FORMAT_VERSION})")


def _symbols(top: Path, config: Config, store, binary: Path | None) -> list[Finding]:
    """Does the build give the analysis what it needs: a symbol table (function names) and
    debug information (each compile unit's flags)?  Of the binary given, else the newest
    stored build, else one built in the working tree."""
    where = "given"
    if binary is None and store is not None:
        binary, where = _newest_stored_binary(store)
    if binary is None and (top / config.project.binary).is_file():
        binary, where = top / config.project.binary, "built in the working tree"
    if binary is None:
        return [Finding("symbols", NOT_YET, "not built yet", "selector calibrate (builds HEAD), or --binary FILE")]
    under_callgrind = any(framework(s.framework).reexecutes and metric_under_callgrind(s.metric) for s in config.suite)
    findings = binary_findings(Path(binary), where, under_callgrind)
    return [_with_build_fix(finding, top, config.build.command) for finding in findings]


def _with_build_fix(finding: Finding, top: Path, command: str) -> Finding:
    """A stripped program's fix, said as this build takes it: the make variable that carries -s."""
    if finding.check != "symbols" or "stripped" not in finding.found:
        return finding
    folder = re.search(r"\bmake\b.*?(?:-C\s*|--directory=)(\S+)", command)
    makefile = next(((top / (folder.group(1) if folder else "") / name) for name in MAKEFILES
                     if (top / (folder.group(1) if folder else "") / name).is_file()), None)
    overrides = strip_overrides(makefile.read_text(errors="replace")) if makefile else []
    if overrides:
        given = " ".join(argument for argument, _ in overrides)
        return Finding(finding.check, finding.status, finding.found,
                       f"add {given} to the make command of [build] command ({makefile.relative_to(top)} strips with -s)")
    if "cmake" in command and "RelWithDebInfo" not in command:
        return Finding(finding.check, finding.status, finding.found,
                       "configure with -DCMAKE_BUILD_TYPE=RelWithDebInfo in [build] command (and no strip step)")
    return finding


def binary_findings(binary: Path, where: str, google_benchmark_under_callgrind: bool = False) -> list[Finding]:
    """Its symbols, and the libraries of its own build it loads (whose code its analysis misses)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(binary, "rb") as handle:
            elf = ELFFile(handle)
            sections = {section.name for section in elf.iter_sections()}
            library = elf.header["e_type"] == "ET_DYN" and not any(s["p_type"] == "PT_INTERP" for s in elf.iter_segments())
            dynamic = elf.get_section_by_name(".dynamic")
            tags = [(tag.entry.d_tag, getattr(tag, "needed", None) or getattr(tag, "runpath", None) or
                     getattr(tag, "rpath", None)) for tag in (dynamic.iter_tags() if dynamic else [])]
            symbols = elf.get_section_by_name(".symtab")
            reenters = google_benchmark_under_callgrind and symbols is not None and any(
                any(name in symbol.name for name in REENTERS) for symbol in symbols.iter_symbols())
    except (OSError, ELFError) as error:
        return [Finding("symbols", FAIL, f"{binary} ({where}): not a readable ELF file ({error})", "")]
    shown = where if where.startswith("stored") else f"{binary} ({where})"
    return [_symbol_finding(sections, library, shown), *_own_libraries(tags), *_reentry(reenters)]


# Google Benchmark 1.9's BENCHMARK_MAIN executes the program again with address space
# randomisation off, unless it is off already: callgrind follows no exec, so it measures
# nothing (an empty output, every run failed).  A process started with it off (setarch -R)
# passes that on to valgrind and the benchmark, which then runs once.
REENTERS = tuple(f.reexecutes for f in FRAMEWORKS.values() if f.reexecutes)  # collectors/frameworks
ADDR_NO_RANDOMIZE = 0x0040000


def _reentry(reenters: bool) -> list[Finding]:
    if not reenters:
        return []
    import ctypes

    personality = ctypes.CDLL(None, use_errno=True).personality(0xFFFFFFFF)
    if personality != -1 and personality & ADDR_NO_RANDOMIZE:
        return [Finding("Google Benchmark re-entry", OK, "randomisation is off (setarch -R): the benchmark runs once")]
    return [Finding("Google Benchmark re-entry", FAIL, "the binary executes itself again to turn address randomisation "
                                                     "off, which callgrind does not follow (runs measure nothing)",
                    "run selector under setarch -R: setarch -R selector calibrate (and collect, confirm, record)")]


def _own_libraries(tags: list[tuple[str, str]]) -> list[Finding]:
    """The shared libraries the program finds through a run path outside the system's
    folders: built with it (zlib's CMake links minigzip to its own libz.so), so the
    project's code is there and the analysis of the program alone does not see it."""
    paths = [path for tag, value in tags if tag in ("DT_RUNPATH", "DT_RPATH") for path in value.split(":")]
    own = [path for path in paths if path and not path.startswith(("/usr/", "/lib", "/opt/"))]
    if not own:
        return []
    needed = [value for tag, value in tags if tag == "DT_NEEDED" and not value.startswith(("libc.", "libm.", "libstdc++",
                                                                                           "libgcc_s", "libpthread"))]
    if not needed:
        return []
    return [Finding("analysed code", WARN, f"the program loads {', '.join(needed)} from its build ({', '.join(own)}): "
                                           "changes there are not seen",
                    "set [project] binary to that library (benchmark commands run {checkout}/<program>), or link "
                    "statically (CMake: -DBUILD_SHARED_LIBS=OFF)")]


def _symbol_finding(sections: set[str], library: bool, binary: str) -> Finding:
    fix = "build with -g and without stripping (CMAKE_BUILD_TYPE=RelWithDebInfo; CFLAGS or MOREFLAGS=-g for make)"
    if ".symtab" not in sections:
        if library:
            return Finding("symbols", WARN, f"{binary}: stripped; only its exported functions are seen", fix)
        return Finding("symbols", FAIL, f"{binary}: stripped, no symbol table: functions cannot be named", fix)
    if ".debug_info" not in sections:
        return Finding("symbols", WARN, f"{binary}: symbol table, but no debug information: build "
                                        "configuration changes are read from build files", fix)
    return Finding("symbols", OK, f"{binary}: symbol table and debug information")


def _newest_stored_binary(store) -> tuple[Path | None, str]:
    commits = store.read("commits")
    if not commits.num_rows or "binary_sha256" not in commits.column_names:
        return None, ""
    rows = sorted((row for row in commits.select(["sha", "author_time", "build_status", "binary_sha256"]).to_pylist()
                   if row["build_status"] == "ok" and row["binary_sha256"]),
                  key=lambda row: row["author_time"], reverse=True)
    lookup = store.binary_lookup([row["sha"] for row in rows], [row["binary_sha256"] for row in rows])
    for row in rows:
        path = lookup(row["sha"])
        if path:
            return Path(path), f"stored build of {row['sha'][:12]}"
    return None, ""


def _store_progress(store, config: Config) -> list[Finding]:
    """The store's format and what it holds: calibration, labels, a model."""
    from perf_selector.storage.store import StoreError

    if store is None:
        tables = {"calibration": None, "labels": None}
        findings = []
    else:
        try:
            tables = {table: store.read(table) for table in ("commits", "calibration", "labels")}
        except StoreError as error:
            return [Finding("store", FAIL, str(error), f"delete the file it names and run {FIRST_COLLECTION} again "
                                                       "(selector calibrate for a calibration file)")]
        commits = tables["commits"].to_pylist()
        built = sum(row.get("build_status") == "ok" for row in commits)
        findings = [Finding("store", OK, f"{store.location}: format {2 if store.verified else 1}"
                                         f"{' (every file verified)' if store.verified else ''}; {len(commits)} commits, "
                                         f"{built} built")]
    return findings + [_calibration(tables["calibration"], config), _labels(tables["labels"]), _model(store)]


def _calibration(table, config: Config) -> Finding:
    """Is every configured benchmark calibrated, with its metric and the labels' settings?"""
    rows = {row["benchmark"]: row for row in table.to_pylist()} if table is not None and table.num_rows else {}
    if not rows:
        return Finding("calibration", FAIL, "not calibrated", "selector calibrate (a first collect also does it)")
    missing = [b.name for b in config.benchmark if b.name not in rows]
    missing += [s.name for s in config.suite if not any(name.startswith(f"{s.name}/") for name in rows)]
    if missing:
        return Finding("calibration", FAIL, f"not calibrated: {', '.join(missing)}", "selector calibrate")
    metrics = label_rules(config).metrics  # a suite's benchmarks ("<suite>/<name>") take their suite's
    other = [name for name, row in rows.items() if metrics.get(name) not in (None, row["metric"])]
    if other:
        return Finding("calibration", FAIL, f"calibrated with another metric: {', '.join(other[:5])}", "selector calibrate")
    exact = sum(bool(row["exact"]) for row in rows.values())
    near = sum(not row["exact"] and near_exact(row["tolerance"], row["min_effect"]) for row in rows.values())
    found = f"{len(rows)} benchmark{'s' * (len(rows) > 1)}: {exact} exact, {near} near-exact, {len(rows) - exact - near} noisy"
    if {(row["alpha"], row["min_effect"]) for row in rows.values()} != {(config.labels.alpha, config.labels.min_effect)}:
        return Finding("calibration", WARN, f"{found}; calibrated with another [labels] alpha or min_effect",
                       "selector calibrate")
    unfit = [f"{name}: {row['unfit_reason']}" for name, row in rows.items() if row.get("fit") is False]
    if unfit:
        return Finding("calibration", WARN, f"{found}; {len(unfit)} unfit, {unfit[0]}", "see `selector calibrate`'s notes")
    return Finding("calibration", OK, found)




def _labels(table) -> Finding:
    if table is None or not table.num_rows:
        return Finding("labels", FAIL, "no labelled commit pairs yet", FIRST_COLLECTION)
    labels = table.column("label").to_pylist()
    decided = sum(label is not None for label in labels)
    found = f"{decided} of {len(labels)} decided ({decided / len(labels):.0%}), {sum(bool(label) for label in labels)} changed"
    if decided / len(labels) < DECIDED_ENOUGH:
        return Finding("labels", WARN, found, "selector confirm (timed metrics), or more repetitions (selector calibrate "
                                              "says how many)")
    return Finding("labels", OK, found)


def _shipped_policy(path: Path) -> str:
    """"; <which model decides and what it saves against the rule>", with "; it steps aside for the
    executed-changed rule: <why>" when the shipped bundle's evidence does not let it prune."""
    from perf_selector.models.bundle import BundleError, load_bundle
    from perf_selector.models.decision import steps_aside

    try:
        bundle = load_bundle(path, load_models=False)
    except BundleError:
        return ""  # select refuses it and says so; the model check is not the place
    from perf_selector.models.decision import policy_summary

    summary = f"; {policy_summary(bundle, shipped=True)}"
    if not steps_aside(bundle):
        return summary
    return f"{summary}; it steps aside for the executed-changed rule: {bundle.settings.get('policy_reason', '')}"


def _model(store) -> Finding:
    """Which model `select` would use (selector/selection/selection.py chooses the same way): the
    project's own bundle, the shipped cross-project model where the own one learnt from
    too few changes or there is none, else no model (every benchmark runs)."""
    from perf_selector.models.bundle import BundleError, load_bundle
    from perf_selector.selector.selection.shipped_model import OWN_POSITIVES_NEEDED, shipped_bundle_path

    own = Path(store.root) / "models" if store is not None and store.location == store.root else None
    shipped = shipped_bundle_path()
    if own is not None and (own / "manifest.json").exists():
        try:
            bundle = load_bundle(own, load_models=False)
        except BundleError as error:
            return Finding("model", FAIL, f"the project's own bundle is refused: {error}", "selector train")
        from perf_selector.models.decision import policy_summary

        model = (f"the project's own ({bundle.settings.get('model')}, trained on {bundle.trained_on.get('commits')} "
                 f"commits): {policy_summary(bundle, shipped=False)}")
        if bundle.settings.get("model_choice"):
            model += f"; chosen: {bundle.settings['model_choice']['reason']}"
        if bundle.settings.get("policy_reason"):
            model += f"; why: {bundle.settings['policy_reason']}"
        thin = [entry.benchmark or "pooled" for entry in bundle.entries if entry.training_positives < OWN_POSITIVES_NEEDED]
        if thin and shipped:
            return Finding("model", OK, f"{model}; the shipped model decides for {', '.join(thin[:4])} (fewer than "
                                        f"{OWN_POSITIVES_NEEDED} labelled changes)")
        return Finding("model", OK, model)
    if shipped:
        return Finding("model", OK, f"the shipped cross-project model (no model of this project yet)"
                                    f"{_shipped_policy(shipped)}", "selector train, once labels exist")
    return Finding("model", WARN, "none: select runs every benchmark", "selector train")
