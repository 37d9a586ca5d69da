"""conformance/report.py (make conformance) turns a run's results.json into docs/conformance.md: the totals
count the test cases that pass under fluid 1.8.5, a file's row its counted / passing / failing cases and
its first error; a partial run leaves the page alone."""

from __future__ import annotations

import importlib.util
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("conformance_report", os.path.join(ROOT, "conformance", "report.py"))
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def _entry(name, oracle_tests, our_tests, our_errors=None, first_error="", rc=None):
    def side(tests, errors, first):
        bad = any(s not in ("ok", "skipped") for s in tests.values())
        return {
            "tests": tests,
            "errors": errors or {},
            "first_error": first,
            "rc": (1 if bad else 0) if rc is None else rc,
            "timed_out": False,
            "seconds": 1.0,
            "data_missing": False,
            "ran": len(tests),
        }

    return {
        "case": {"name": name, "kind": "unittest", "data": "-", "args": []},
        "fluid18": side(oracle_tests, {}, ""),
        "fluidcompat": side(our_tests, our_errors, first_error),
    }


RESULTS = {
    # two cases count (t3 is skipped, t4 fails under fluid 1.8.5); t2 fails under fluidcompat
    "test_a.py": _entry(
        "test_a.py",
        {"A.t1": "ok", "A.t2": "ok", "A.t3": "skipped", "A.t4": "fail"},
        {"A.t1": "ok", "A.t2": "error", "A.t3": "skipped", "A.t4": "ok"},
        {"A.t2": "ValueError: a | b `c`\nsecond line"},
    ),
    # the module does not import under fluidcompat: its three cases count and none passes
    "sub/test_b.py": _entry(
        "sub/test_b.py",
        {"B.t1": "ok", "B.t2": "ok", "B.t3": "ok"},
        {"_FailedTest.test_b": "error"},
        {"_FailedTest.test_b": "ImportError: no module"},
        "_FailedTest.test_b: ImportError: no module",
    ),
    # nothing passes under fluid 1.8.5: not counted
    "test_c.py": _entry("test_c.py", {"C.t1": "error"}, {"C.t1": "ok"}),
    "test_d.py": _entry("test_d.py", {"D.t1": "ok", "D.t2": "ok"}, {"D.t1": "ok", "D.t2": "ok"}),
}


def _expected():
    counted = passing = 0
    for e in RESULTS.values():
        good = [t for t, s in e["fluid18"]["tests"].items() if s == "ok"]
        counted += len(good)
        passing += sum(1 for t in good if e["fluidcompat"]["tests"].get(t) == "ok")
    return counted, passing


def _cells(page, name):
    row = [line for line in page.splitlines() if line.startswith("| %s " % name)]
    assert len(row) == 1, page
    return [c.strip() for c in re.split(r"(?<!\\)\|", row[0])[1:-1]]


def test_totals_count_the_cases_passing_under_fluid():
    counted, passing = _expected()
    t = report.totals(RESULTS)
    assert (t["counted"], t["passing"], t["failing"]) == (counted, passing, counted - passing)
    assert t["files"] == len(RESULTS)
    assert t["judged"] == 3 and t["complete"] == 1
    page = report.render(RESULTS, "2020-01-02", "abc1234 (2020-01-02)", checkout=ROOT)
    assert (
        "**%d of %d pass (%.1f%%)**, %d fail" % (passing, counted, 100.0 * passing / counted, counted - passing) in page
    )
    assert "2020-01-02" in page and "abc1234" in page


def test_rows_give_counts_and_a_one_line_escaped_first_error():
    page = report.render(RESULTS, "2020-01-02", "abc1234", checkout=ROOT)
    good = [t for t, s in RESULTS["test_a.py"]["fluid18"]["tests"].items() if s == "ok"]
    ok = [t for t in good if RESULTS["test_a.py"]["fluidcompat"]["tests"][t] == "ok"]
    assert _cells(page, "test_a.py") == [
        "test_a.py",
        str(len(good)),
        str(len(ok)),
        str(len(good) - len(ok)),
        "`A.t2: ValueError: a \\| b 'c' second line`",
    ]
    assert _cells(page, "sub/test_b.py") == ["sub/test_b.py", "3", "0", "3", "`not run: ImportError: no module`"]
    assert _cells(page, "test_d.py") == ["test_d.py", "2", "2", "0", ""]
    # a file with nothing passing under fluid 1.8.5 is listed apart, not in the counted table
    counted_table = page.split("## Files with no counted case")[0]
    assert "test_c.py" not in counted_table and "| test_c.py" in page


def test_long_errors_are_cut_to_one_short_line():
    cell = report.short("E: " + "x" * 500 + "\n" + "y", checkout=ROOT)
    assert "\n" not in cell and len(cell) <= report.ERROR_WIDTH + 2 and cell.endswith("...`")
    assert report.short(ROOT + "/fluidcompat/framework.py: bad", checkout=ROOT) == "`fluidcompat/framework.py: bad`"


def test_only_a_full_run_writes_the_page(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RESULTS))
    out = tmp_path / "conformance.md"
    base = tmp_path / "baseline.json"
    extra = tmp_path / "extra.json"
    names = sorted(RESULTS)
    base.write_text(json.dumps({n: RESULTS[n]["fluid18"] for n in names[:2]}))
    extra.write_text(json.dumps({n: RESULTS[n]["fluid18"] for n in names[2:]}))
    args = [str(results), "--baseline", str(base), "--out", str(out), "--checkout", str(tmp_path)]
    args += ["--date", "2020-01-02"]
    # the run covers every file of both baselines: the page is written
    report.main(args + ["--baseline-extra", str(extra)])
    assert out.exists()
    assert out.read_text() == report.render(RESULTS, "2020-01-02", "unknown", checkout=str(tmp_path))
    out.unlink()
    # a baseline file the run lacks makes it partial: nothing written
    extra.write_text(json.dumps({"test_e.py": RESULTS["test_d.py"]["fluid18"]}))
    report.main(args + ["--baseline-extra", str(extra)])
    assert not out.exists()
