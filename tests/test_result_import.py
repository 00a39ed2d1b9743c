"""Importing benchmark results from pyperf, Google Benchmark and asv files."""

from __future__ import annotations

import json

import pytest

from perf_selector.collectors.errors import UserError
from perf_selector.collectors.result_import import import_results


def test_pyperf(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({
        "version": "1.0", "metadata": {"name": "sort", "unit": "second"},
        "benchmarks": [{"runs": [{"metadata": {}, "warmups": [[1, 0.5]], "values": [0.41, 0.42]},
                                 {"warmups": [[1, 0.49]], "values": [0.40, 0.43]}]}],
    }))
    rows = import_results(path).to_pandas()
    measured = rows[rows["repetition"] >= 0]
    assert list(measured["value"]) == [0.41, 0.42, 0.40, 0.43] and list(measured["repetition"]) == [0, 1, 2, 3]
    assert (rows[rows["repetition"] == -1]["value"] == [0.5, 0.49]).all() and set(rows["benchmark"]) == {"sort"}


def test_google_benchmark_skips_aggregates_and_converts_units(tmp_path):
    path = tmp_path / "gb.json"
    path.write_text(json.dumps({"context": {}, "benchmarks": [
        {"name": "BM_fib/20", "run_name": "BM_fib/20", "run_type": "iteration", "real_time": 250.0, "time_unit": "ns"},
        {"name": "BM_fib/20", "run_name": "BM_fib/20", "run_type": "iteration", "real_time": 2.5, "time_unit": "ms"},
        {"name": "BM_fib/20_median", "run_name": "BM_fib/20", "run_type": "aggregate", "real_time": 1.0, "time_unit": "ms"},
    ]}))
    rows = import_results(path).to_pandas()
    assert list(rows["value"]) == pytest.approx([250e-9, 2.5e-3]) and list(rows["repetition"]) == [0, 1]


def test_asv_samples_and_parameters(tmp_path):
    path = tmp_path / "asv.json"
    path.write_text(json.dumps({
        "commit_hash": "abc", "version": 2,
        "result_columns": ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
                           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"],
        "results": {
            "bench.time_sort": [[0.1, 0.2], [["10", "100"]], "v", 0, 1, None, None, None, None, None, None,
                                [[0.11, 0.1], [0.21, 0.2]], None],
            "bench.time_plain": [[0.5], [], "v", 0, 1, None, None, None, None, None, None, None, None],
        },
    }))
    rows = import_results(path).to_pandas()
    by_name = rows.groupby("benchmark")["value"].apply(list).to_dict()
    assert by_name == {"bench.time_sort(10)": [0.11, 0.1], "bench.time_sort(100)": [0.21, 0.2], "bench.time_plain": [0.5]}


def test_bad_files_give_clear_errors(tmp_path):
    with pytest.raises(UserError, match="no such results file"):
        import_results(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(UserError, match="not a JSON"):
        import_results(tmp_path / "x.json")
    (tmp_path / "y.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(UserError, match="cannot tell"):
        import_results(tmp_path / "y.json")
    (tmp_path / "z.json").write_text(json.dumps({"context": {}, "benchmarks": [{"name": "a"}]}))
    with pytest.raises(UserError, match="not a valid google-benchmark"):
        import_results(tmp_path / "z.json")
