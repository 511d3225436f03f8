"""bench/run --merge: what bench/README.md promises about merged reports."""
import importlib.machinery
import importlib.util
import os
import unittest

RUN = os.path.join(os.path.dirname(__file__), "..", "run")
loader = importlib.machinery.SourceFileLoader("bench_run", RUN)
spec = importlib.util.spec_from_loader("bench_run", loader)
bench_run = importlib.util.module_from_spec(spec)
loader.exec_module(bench_run)


def record(benchmark, quick=None):
    r = {"benchmark": benchmark, "impl": "fjord", "threads": 1}
    if quick is not None:
        r["run"] = {"commit": "c0ffee0", "date": "then", "passes": 2 if quick else 5, "quick": quick}
    return r


def document(records, quick, missing=()):
    return {"git_commit": "abc1234", "date": "earlier", "reps": 2 if quick else 5, "quick": quick,
            "records": records, "missing": list(missing)}


class MergeTest(unittest.TestCase):
    def test_keeps_the_other_benchmarks_of_the_same_kind_and_replaces_the_rerun_ones(self):
        old = document([record("fib"), record("echo")], quick=False)
        merged, _, left_out = bench_run.merge_records(old, [record("echo", quick=False)], [], quick=False)
        self.assertEqual([r["benchmark"] for r in merged], ["fib", "echo"])
        self.assertEqual(left_out, [])
        # An old record without its own run gets the old document's (its CPU unknown: the document
        # names no machine).
        self.assertEqual(merged[0]["run"], {"commit": "abc1234", "date": "earlier", "passes": 5, "quick": False,
                                            "cpu": "?"})

    def test_old_records_take_the_cpu_their_report_named_and_the_report_names_each_runs_cpu(self):
        old = document([record("fib", quick=False), record("echo", quick=False)], quick=False)
        old["machine"] = {"cpu": "AMD EPYC"}
        new = record("scan", quick=False)
        new["run"]["cpu"] = "Intel Xeon"
        new["run"]["date"] = "now"
        merged, _, _ = bench_run.merge_records(old, [new], [], quick=False)
        self.assertEqual([r["run"]["cpu"] for r in merged], ["AMD EPYC", "AMD EPYC", "Intel Xeon"])
        lines = bench_run.provenance(merged)
        self.assertIn("- commit `c0ffee0`, then, 5 passes, AMD EPYC: fib, echo", lines)
        self.assertIn("- commit `c0ffee0`, now, 5 passes, Intel Xeon: scan", lines)

    def test_a_full_run_never_takes_quick_records(self):
        old = document([record("fib"), record("csp_sum")], quick=True, missing=[("fib", "go", "no go")])
        merged, missing, left_out = bench_run.merge_records(old, [record("echo", quick=False)], [], quick=False)
        self.assertEqual([r["benchmark"] for r in merged], ["echo"])
        self.assertEqual(left_out, ["csp_sum", "fib"])
        self.assertEqual(missing, [])

    def test_a_quick_run_never_takes_full_records(self):
        old = document([record("fib", quick=False), record("scan", quick=True)], quick=True)
        merged, _, left_out = bench_run.merge_records(old, [record("echo", quick=True)], [], quick=True)
        self.assertEqual([r["benchmark"] for r in merged], ["scan", "echo"])
        self.assertEqual(left_out, ["fib"])


if __name__ == "__main__":
    unittest.main()
