"""selector.toml: the sample loads; every kind of mistake is one line naming the key."""

from __future__ import annotations

import subprocess

import pytest

from perf_selector.selector.config import ConfigError, load_config
from perf_selector.selector.onboarding.sample_history import project_file
from tests.helpers import assert_one_line_error, run_selector


def test_sample_configuration_loads(tmp_path):
    path = tmp_path / "selector.toml"
    path.write_text(project_file("selector.toml") + "\n" + project_file("benchmarks.toml"))
    config = load_config(path)
    assert config.project.binary == "prog"
    assert config.build.timeout == 120
    assert [b.name for b in config.benchmark] == ["checksum", "sort", "fib", "weights"]
    assert config.labels.alpha == 0.05 and config.profile.tool == "callgrind"


BAD = [
    ("[project]\nbinary = 'x'\n", "build: required key is missing"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\ntimeout = -5\n", "build.timeout: expected `int` >= 1 (got -5)"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\ntimout = 5\n", "build.timout: unknown key"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[benchmark]]\nname = 'a'\ncommand = 'x'\nmetric = '([0-9'\n",
     "benchmark.0.metric: not wall_time, cpu_time, max_rss, instructions, heap_bytes, heap_blocks, or a valid regex"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[benchmark]]\nname = 'a'\ncommand = 'x'\ndirection = 'up'\n",
     "benchmark.0.direction"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[benchmark]]\nname = 'a'\ncommand = 'x'\n[[benchmark]]\nname = 'a'\ncommand = 'y'\n",
     "repeated: a"),
    ("[project\nbinary = 'x'\n", "not valid TOML"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[benchmark]]\nname = 'awk'\n"
     "command = \"sh -c 'echo 1 | awk \\\"{print $1}\\\"'\"\n",
     "benchmark.0.command: unknown placeholder {print $1} (placeholders are {binary}, {checkout}, {suite}; write {{ and }} "
     "for a literal brace) in benchmark 'awk'"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[benchmark]]\nname = 'half'\ncommand = '{binary} }'\n",
     "benchmark.0.command: Single '}' encountered"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[benchmark]]\nname = 'git-add'\ncommand = '{binary} add'\n"
     "setup = 'cp -a {data} work'\n", "benchmark.0.setup: unknown placeholder {data}"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'db'\nframework = 'command'\n"
     "command = '{binary} --benchmarks=fill'\nnames = ['readrandom']\n",
     "suite.0.command: a command suite's command names the benchmark it runs with {name}"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'db'\nframework = 'command'\n"
     "command = '{binary} {name}'\n", "suite.0: a command suite gives its benchmarks by `names` or by `list_command`"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'gb'\nframework = 'google-benchmark'\n"
     "names = ['BM_a']\n", "suite.0: a google-benchmark suite lists its benchmarks itself"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'gb'\nframework = 'google-benchmark'\n"
     "metric = 'bytes per second'\n", "suite.0.metric: a Google Benchmark metric is one of wall_time, cpu_time, max_rss, instructions, heap_bytes, heap_blocks, real_time"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'gb'\nframework = 'gbench'\n",
     "suite.0.framework"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'gb'\nframework = 'google-benchmark'\n"
     "include = '(BM_'\n", "suite.0.include: not a valid regex"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'g/b'\nframework = 'google-benchmark'\n",
     "suite.0.name"),
    ("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[suite]]\nname = 'db'\nframework = 'command'\n"
     "command = '{binary} {name}'\nnames = ['readrandom', {name = 'readseq', isolate = '*ReadSeq*'}]\n",
     "suite.0.isolate: a command suite isolates each benchmark by a callgrind function pattern: give `isolate` a pattern "
     "with {name}, each name its own (no pattern for readrandom), or isolate = false"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_configuration_is_one_line(tmp_path, text, message):
    path = tmp_path / "selector.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert message in str(caught.value) and str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_cli_reports_bad_and_missing_configuration(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert_one_line_error(run_selector("collect", "--repo", str(tmp_path)), "no selector.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[project]\nbinary = 3\n[build]\ncommand = 'make'\n")
    assert_one_line_error(run_selector("collect", "--repo", str(tmp_path), "--config", str(bad)), "project.binary")


def test_collect_outside_a_repository(tmp_path):
    assert_one_line_error(run_selector("collect", "--repo", str(tmp_path)), "not inside a git repository")


def test_warmups_default_by_metric_and_reuse_does_not_change_the_harness(tmp_path):
    from perf_selector.selector.config import benchmark_specs, harness_digest

    head = "[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n"
    benchmark = "[[benchmark]]\nname = '{name}'\ncommand = 'x'\nmetric = '{metric}'\n{extra}\n"
    path = tmp_path / "selector.toml"
    path.write_text(head + "".join(benchmark.format(name=n, metric=m, extra=e) for n, m, e in [
        ("counted", "instructions", ""), ("timed", "wall_time", ""), ("parsed", "([0-9]+) ops", ""),
        ("primed", "instructions", "warmup = 2"),
    ]))
    config = load_config(path)
    assert {spec.name: spec.warmup for spec in benchmark_specs(config)} == {"counted": 0, "timed": 1, "parsed": 1, "primed": 2}
    # The harness digest (a model trained under another harness is stale) sees the
    # effective warm-up: writing the default out changes nothing, and neither does `reuse`.
    explicit = tmp_path / "explicit.toml"
    explicit.write_text(path.read_text().replace("metric = 'wall_time'\n", "metric = 'wall_time'\nwarmup = 1\nreuse = false\n"))
    assert harness_digest(load_config(explicit), "timed") == harness_digest(config, "timed")
    assert harness_digest(load_config(explicit), "counted") == harness_digest(config, "counted")


def test_literal_braces_are_written_doubled(tmp_path):
    from perf_selector.collectors.benchmark_runner import expand
    from perf_selector.selector.config import benchmark_specs

    path = tmp_path / "selector.toml"
    path.write_text("[project]\nbinary = 'x'\n[build]\ncommand = 'make'\n[[benchmark]]\nname = 'awk'\n"
                    "command = \"sh -c 'echo 1 | awk \\\"{{print $1}}\\\"' {binary}\"\n")
    spec = benchmark_specs(load_config(path))[0]
    assert expand(spec.command, tmp_path / "x", tmp_path, None) == ["sh", "-c", 'echo 1 | awk "{print $1}"', str(tmp_path / "x")]


def test_a_missing_suite_folder_stops_only_what_runs_benchmarks(tmp_path):
    """A store moved without its inputs (a CI cache) still loads its configuration for
    evaluate, backtest, train and select; collect and calibrate say which folder is missing."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "selector.toml").write_text("[project]\nbinary = 'x'\nsuite = 'inputs'\n[build]\ncommand = 'make'\n"
                                            "[[benchmark]]\nname = 'a'\ncommand = '{binary} {suite}/a.txt'\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "x"],
                   check=True)
    config = load_config(tmp_path / "selector.toml")
    assert config.project.suite == str(tmp_path / "inputs")
    for command in ("collect", "calibrate"):
        assert_one_line_error(run_selector(command, "--repo", str(tmp_path)), f"project.suite: {tmp_path / 'inputs'} is not a directory")
