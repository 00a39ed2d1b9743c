"""The CI templates a user includes: the GitHub Action (action.yml) and the GitLab CI
template (ci/gitlab/selector.gitlab-ci.yml), run here without GitHub, GitLab or a network.

Each `run:` step of the action runs as GitHub runs it (bash -eo pipefail, in the
checkout, with GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files), its `${{ }}` expressions
filled from the inputs; each GitLab job's script runs with the template's variables.
What needs GitHub or the network is not run, and is named by the tests: the steps that
`uses:` another action (setup-python, cache restore and save) are skipped, and pip is
a stand-in that notes what it was asked to install (the package under test is importable
already).  The selection runs on the sample project from an empty store, as a team's
first pipelines do: every benchmark runs, the commit is recorded, training waits; then
the next commit is selected against the recorded one, recorded, and the model trained.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from perf_selector.selector.onboarding.sample_history import make_sample_history
from tests.helpers import core_python

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
GITLAB = ROOT / "ci" / "gitlab" / "selector.gitlab-ci.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
COMPARISON = re.compile(r"^([\w.-]+)\s*(==|!=)\s*'([^']*)'$")
SKIPPED_ACTIONS = ["actions/setup-python@v5", "actions/cache/restore@v4"]


class StepFailed(AssertionError):
    pass


@dataclass
class ActionRun:
    outputs: dict[str, str]
    skipped: list[str]  # the steps that `uses:` another action, not run here
    summary: str = ""
    logs: list[str] = field(default_factory=list)


@pytest.fixture
def stand_ins(tmp_path) -> dict[str, str]:
    """PATH with a `python` whose `-m pip` only notes its arguments (in PIP_LOG), and a
    `selector` that is this checkout's (the push path through the core install when the
    tests have one, as the action installs no extra for select)."""
    directory = tmp_path / "bin"
    directory.mkdir()
    log = tmp_path / "pip.log"
    (directory / "python").write_text(f"""#!/bin/sh
if [ "$1" = -m ] && [ "$2" = pip ]; then shift 2; printf '%s\\n' "$*" >> "$PIP_LOG"; exit 0; fi
exec {sys.executable} "$@"
""")
    core = core_python() or sys.executable
    (directory / "selector").write_text(f"""#!/bin/sh
case "$1" in select|hook|functions|diff) exec {core} -m perf_selector "$@";; esac
exec {sys.executable} -m perf_selector "$@"
""")
    for shim in directory.iterdir():
        shim.chmod(0o755)
    return {"PATH": f"{directory}{os.pathsep}{os.environ['PATH']}", "PIP_LOG": str(log)}


def _pip_requests(environment: dict[str, str]) -> list[str]:
    log = Path(environment["PIP_LOG"])
    return log.read_text().splitlines() if log.exists() else []


# ---------------------------------------------------------------- the GitHub Action
def _lookup(expression: str, contexts: dict) -> str:
    """The value of a context path (inputs.mode, steps.select.outputs.run, github.run_id), ""
    for a step that did not run, as GitHub has it; anything else fails: the action keeps to
    expressions this test can evaluate."""
    value = contexts
    for part in expression.split("."):
        assert isinstance(value, dict), f"unsupported expression {expression!r}"
        value = value.get(part, {} if expression.startswith("steps.") else None)
    assert isinstance(value, str) or value == {}, f"unsupported expression {expression!r}"
    return value or ""


def _substitute(text: str, contexts: dict) -> str:
    return EXPRESSION.sub(lambda match: _lookup(match.group(1), contexts), str(text))


def _condition(expression: str, contexts: dict) -> bool:
    """`if:` of the forms the action uses: comparisons with a quoted literal, joined by &&."""
    results = []
    for part in expression.split("&&"):
        match = COMPARISON.match(part.strip())
        assert match, f"unsupported condition {expression!r}"
        name, operator, literal = match.groups()
        results.append((_lookup(name, contexts) == literal) == (operator == "=="))
    return all(results)


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line) if path.exists() else {}


def run_action(repository: Path, inputs: dict[str, str], stand_ins: dict[str, str], work: Path) -> ActionRun:
    """Every step of action.yml in order, as GitHub would run it in `repository`."""
    action = yaml.safe_load(ACTION.read_text())
    assert set(inputs) <= set(action["inputs"]), "an input action.yml does not declare"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repository, capture_output=True, text=True)  # none: ""
    contexts = {
        "inputs": {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()} | inputs,
        "github": {"run_id": "7", "run_attempt": "1", "sha": head.stdout.strip(), "workspace": str(repository)},
        "steps": {},
    }
    work.mkdir(parents=True, exist_ok=True)
    run = ActionRun({}, [])
    for number, step in enumerate(action["runs"]["steps"]):
        if "if" in step and not _condition(step["if"], contexts):
            continue
        if "uses" in step:
            run.skipped.append(step["uses"])
            continue
        output, summary = work / f"output-{number}", work / "summary.md"
        environment = {**os.environ, **stand_ins, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
                       "GITHUB_ENV": str(work / f"env-{number}"), "GITHUB_ACTION_PATH": str(ROOT),
                       "GITHUB_WORKSPACE": str(repository)}
        environment |= {name: _substitute(value, contexts) for name, value in step.get("env", {}).items()}
        script = work / f"step-{number}.sh"
        script.write_text(step["run"])
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repository,
                              capture_output=True, text=True, env=environment)
        run.logs.append(done.stdout + done.stderr)
        if done.returncode != 0:
            raise StepFailed(f"step {step.get('name', number)!r} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        if "id" in step:
            contexts["steps"][step["id"]] = {"outputs": _outputs(output)}
        run.summary = summary.read_text() if summary.exists() else ""
    run.outputs = {name: _substitute(spec["value"], contexts) for name, spec in action["outputs"].items()}
    return run


def test_the_action_passes_inputs_through_env_and_runs_in_bash():
    """A `${{ }}` inside a script would be pasted into its text (an input could run code);
    every run step names its shell, as composite actions must."""
    action = yaml.safe_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    declared = set(action["inputs"])
    for step in action["runs"]["steps"]:
        assert "uses" in step or (step["shell"] == "bash" and "${{" not in step["run"]), step
        used = {name for text in map(str, [step.get("if", ""), *step.get("env", {}).values(), *step.get("with", {}).values()])
                for name in re.findall(r"inputs\.([\w-]+)", text)}
        assert used <= declared, used - declared
    assert {"run", "matrix", "any", "filters"} <= set(action["outputs"])


def test_the_action_refuses_an_unknown_mode(tmp_path, stand_ins):
    with pytest.raises(StepFailed, match="mode is select or record, not 'selcet'"):
        run_action(tmp_path, {"mode": "selcet"}, stand_ins, tmp_path / "work")


# ---------------------------------------------------------------- the GitLab template
def _gitlab_job(name: str) -> tuple[dict, dict[str, str]]:
    """The job with what it extends merged in (one level, as the template uses it), and its variables."""
    template = yaml.safe_load(GITLAB.read_text())
    job = dict(template[name])
    base = template.get(job.pop("extends", ""), {})
    merged = {**base, **job, "cache": {**base.get("cache", {}), **job.get("cache", {})}}
    variables = {**template["variables"], **base.get("variables", {}), **job.get("variables", {})}
    return merged, {key: str(value) for key, value in variables.items()}


def run_gitlab_job(repository: Path, name: str, variables: dict[str, str], stand_ins: dict[str, str]) -> str:
    """The job's before_script and script lines in one bash, as GitLab's runner runs them."""
    job, defaults = _gitlab_job(name)
    lines = [*job.get("before_script", []), *job["script"]]
    environment = {**os.environ, **stand_ins, **defaults, **variables, "CI_PROJECT_DIR": str(repository),
                   "CI_DEFAULT_BRANCH": "main", "CI_COMMIT_BRANCH": "main"}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(lines)], cwd=repository,
                          capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        raise StepFailed(f"GitLab job {name} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def test_the_gitlab_template_selects_first_and_records_last():
    template = yaml.safe_load(GITLAB.read_text())
    select, _ = _gitlab_job("selector-select")
    record, variables = _gitlab_job("selector-record")
    assert (select["stage"], record["stage"]) == (".pre", ".post")
    assert select["artifacts"]["reports"]["dotenv"] == "selector.env"
    assert (select["cache"]["policy"], record["cache"]["policy"]) == ("pull", "pull-push")
    assert select["cache"]["paths"] == record["cache"]["paths"] == [".selector/"]
    assert variables["GIT_DEPTH"] == "0"
    assert all(isinstance(value, str) for value in template["variables"].values())


def _dotenv(path: Path) -> dict[str, str]:
    """GitLab's dotenv rules: no empty lines or comments, names of letters, digits and _, under 5 KB."""
    text = path.read_text()
    assert len(text.encode()) < 5 * 1024 and text.endswith("\n")
    lines = text.splitlines()
    assert all(re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line) for line in lines), text
    return dict(line.split("=", 1) for line in lines)


def test_the_gitlab_dotenv_runs_everything_when_the_names_would_not_fit(capsys):
    from perf_selector.selector.selection.selection import Decision, Selection
    from perf_selector.selector.selection.selection_output import print_gitlab_dotenv

    few = Selection("c" * 40, None, [Decision("compress", "run", "why"), Decision("gb/BM_a", "run", "why"),
                                     Decision("gb/BM_b", "skip", "why"), Decision("db-suite/fill", "skip", "why")], None, [])
    print_gitlab_dotenv(few)
    assert capsys.readouterr().out.splitlines() == [
        "SELECTOR_ANY=true", "SELECTOR_RUN=compress gb/BM_a", "SELECTOR_FILTER_GB=^(BM_a)$", "SELECTOR_FILTER_DB_SUITE=^$"]
    many = Selection("c" * 40, None, [Decision("compress", "skip", "why")] +
                     [Decision(f"gb/BM_long_benchmark_name_{i}", "run", "why") for i in range(300)], None, [])
    print_gitlab_dotenv(many)
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["SELECTOR_ANY=true", "SELECTOR_RUN=compress gb/*", "SELECTOR_FILTER_GB=.*"]
    assert "too large for a GitLab dotenv report" in captured.err


# ---------------------------------------------------------------- a team's first pipelines
@pytest.mark.slow
def test_from_an_empty_store_to_a_trained_model_through_both_templates(tmp_path, stand_ins):
    """Commit 1 selected by the action (everything runs: nothing is known) and recorded by
    the GitLab template (nothing to train on yet); commit 2 selected by both against
    commit 1, and recorded by the action, which trains the model."""
    repository = tmp_path / "project"
    make_sample_history(repository)
    git = lambda *arguments: subprocess.run(["git", *arguments], cwd=repository, check=True)  # noqa: E731
    git("checkout", "-q", "--detach", "HEAD~1")  # CI checks out the pushed commit

    first = run_action(repository, {}, stand_ins, tmp_path / "select-1")
    assert first.skipped == SKIPPED_ACTIONS
    assert _pip_requests(stand_ins) == [f"install --quiet {ROOT}"]  # the core: this checkout, no extra
    everything = ["checksum", "sort", "fib", "weights"]
    assert json.loads(first.outputs["run"]) == everything and first.outputs["any"] == "true"
    assert json.loads(first.outputs["matrix"]) == {"benchmark": everything} and first.outputs["filters"] == ""
    assert "| checksum | run |" in first.summary and "no ancestor" in first.summary
    assert (repository / ".selector").is_dir()

    recorded = run_gitlab_job(repository, "selector-record", {"SELECTOR_CONFIRM": "true"}, stand_ins)
    assert _pip_requests(stand_ins)[-1] == "install --quiet perf-selector[train]"
    assert "recorded" in recorded and "note: not trained yet" in recorded
    # confirming asks for the recorded commit's labels: the first commit has none to confirm
    assert "nothing to confirm" in recorded, recorded

    git("checkout", "-q", "--detach", "main")
    second = run_action(repository, {}, stand_ins, tmp_path / "select-2")
    assert second.outputs["any"] == "true" and "no ancestor" not in second.summary
    assert "build configuration" in second.summary  # the newest commit raises the optimization level
    run_gitlab_job(repository, "selector-select", {}, stand_ins)
    assert _pip_requests(stand_ins)[-1] == "install --quiet perf-selector"
    dotenv = _dotenv(repository / "selector.env")
    assert dotenv == {"SELECTOR_ANY": "true", "SELECTOR_RUN": " ".join(json.loads(second.outputs["run"]))}

    trained = run_action(repository, {"mode": "record", "confirm": "true"}, stand_ins, tmp_path / "record-2")
    assert trained.skipped == SKIPPED_ACTIONS + ["actions/cache/save@v4"]
    # the sample counts instructions: exact, its labels need no confirmation, and the step says so
    assert any("nothing to confirm" in log for log in trained.logs), "\n".join(trained.logs)
    assert _pip_requests(stand_ins)[-1] == f"install --quiet {ROOT}[train]"
    assert (repository / ".selector" / "models" / "manifest.json").exists(), "\n".join(trained.logs)
