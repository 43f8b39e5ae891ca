"""examples/python/plan.py: the table, --json, and its exit statuses."""
import json
import os
import subprocess
import sys
import unittest

from support import PYDIR, SMALL_SPEC, arachne, need

SCRIPT = os.path.join(PYDIR, "plan.py")


def run(*args):
    env = dict(os.environ)
    env.setdefault("ARACHNE_LIB", arachne.library_path())
    return subprocess.run([sys.executable, SCRIPT] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


class PlanScriptTest(unittest.TestCase):
    def test_usage_error(self):
        r = run("--cluster", SMALL_SPEC)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--model", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_bad_cluster(self):
        r = run("--model", "llama3-8b", "--cluster", "a100-40:2y4")
        self.assertEqual(r.returncode, 1)
        self.assertIn("plan.py: ", r.stderr)
        self.assertIn("offset", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_bad_model(self):
        r = run("--model", "gpt-7", "--cluster", SMALL_SPEC)
        self.assertEqual(r.returncode, 1)
        self.assertIn("gpt-7", r.stderr)

    def _need_planner(self):
        need("arachne_cost_model_create", "arachne_profile_generate", "arachne_plan_to_json")
        if not (arachne.has_function("arachne_plan_build") or arachne.has_function("arachne_search_random")):
            self.skipTest("the library has neither the policy planner nor random search yet")

    def test_json(self):
        self._need_planner()
        r = run("--model", "llama3-8b", "--cluster", SMALL_SPEC, "--global-batch", "64", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        self.assertEqual(d["format"], "arachne-plan")
        self.assertEqual(d["model"], "llama3-8b")
        self.assertEqual(d["cluster"], SMALL_SPEC)
        self.assertEqual(d["global_batch"], 64)

    def test_out_and_svg(self):
        self._need_planner()
        need("arachne_plan_save", "arachne_plan_save_svg")
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            out, svg = os.path.join(tmp, "p.json"), os.path.join(tmp, "p.svg")
            r = run("--model", "llama3-8b", "--cluster", SMALL_SPEC, "--global-batch", "64", "--json",
                    "--out", out, "--svg", svg)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                self.assertEqual(json.load(f), json.loads(r.stdout))
            with open(svg) as f:
                self.assertIn("<svg", f.read())

    def test_table(self):
        self._need_planner()
        r = run("--model", "llama3-8b", "--cluster", SMALL_SPEC, "--samples", "2", "--global-batch", "64")
        self.assertEqual(r.returncode, 0, r.stderr)
        for word in ("template 0", "GPU x TP", "layers", "stage ms", "memory GB/GPU", "iteration", "tokens/s",
                     "MFU"):
            self.assertIn(word, r.stdout)
        if arachne.Policy.bundled_path() is None or not arachne.has_function("arachne_plan_build"):
            self.assertIn("plan.py: ", r.stderr)       # says which planner stood in

    def test_layers_half_open_like_the_cli(self):
        # One convention everywhere: FIRST-END half-open, as the plan JSON's
        # "layers": [first, end] and the CLI's table.
        self._need_planner()
        import re
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            env = dict(os.environ)
            env.setdefault("ARACHNE_LIB", arachne.library_path())
            r = subprocess.run([sys.executable, SCRIPT, "--model", "llama3-8b", "--cluster", "a100-40:2x4",
                                "--samples", "1", "--out", out], env=env, cwd=tmp, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(os.listdir(tmp), ["p.json"])  # writes only where told
            with open(out) as f:
                d = json.load(f)
        want = ["%d-%d" % tuple(st["layers"]) for t in d["templates"] for st in t["stages"]]
        got = re.findall(r"^  \d+ +\S+ x \d+ +(\d+-\d+) ", r.stdout, re.M)
        self.assertEqual(got, want)
        self.assertTrue(want[0].startswith("0-") and want[-1].endswith("-32"), want)
        cli = os.environ.get("ARACHNE_BIN") or os.path.join(os.path.dirname(os.path.dirname(PYDIR)), "bin", "arachne")
        if os.path.exists(cli) and arachne.Policy.bundled_path():
            c = subprocess.run([cli, "plan", "--model", "llama3-8b", "--cluster", "a100-40:2x4", "--samples", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(c.returncode, 0, c.stderr)
            self.assertEqual(re.findall(r"^  \d+ +\S+ +\d+ +(\d+-\d+) ", c.stdout, re.M), want)


if __name__ == "__main__":
    unittest.main()
