"""Python values on their way to C: integers are range-checked (ctypes would
wrap them silently), strings with a NUL are refused (C would cut them), and
constructors take what users pass or raise TypeError at once."""
import json
import os
import pathlib
import tempfile
import unittest

from support import REPO, SMALL_SPEC, arachne, need


class IntegerRangeTest(unittest.TestCase):
    def test_add_nodes_count(self):
        c = arachne.Cluster()
        with self.assertRaises(OverflowError) as e:
            c.add_nodes("h100", 2 ** 32 + 1, 8)     # wrapped to 1 node before
        self.assertIn("count", str(e.exception))
        self.assertIn("4294967297", str(e.exception))
        with self.assertRaises(OverflowError) as e:
            c.add_nodes("h100", 1, -2 ** 31 - 1)
        self.assertIn("gpus_per_node", str(e.exception))
        self.assertEqual(c.gpu_count(), 0)           # nothing was added

    def test_search_budget_and_seed(self):
        need("arachne_search_random", "arachne_cost_model_create")
        cm = arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32)
        with self.assertRaises(OverflowError) as e:
            arachne.search_random(cm, budget=2 ** 64 + 1, seed=1)   # 1 evaluation before
        self.assertIn("budget", str(e.exception))
        with self.assertRaises(OverflowError) as e:
            arachne.search_random(cm, budget=10, seed=-1)
        self.assertIn("seed", str(e.exception))
        with self.assertRaises(OverflowError) as e:
            arachne.search_random(cm, budget=10, seed=2 ** 64)
        self.assertIn("seed", str(e.exception))
        plan = arachne.search_random(cm, budget=10, seed=2 ** 64 - 1)   # the top of uint64_t is fine
        self.assertGreater(plan.samples_per_s, 0)

    def test_template_get(self):
        need("arachne_search_random", "arachne_cost_model_create")
        cm = arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32)
        plan = arachne.search_random(cm, budget=10, seed=1)
        with self.assertRaises(OverflowError) as e:
            plan.template_get(2 ** 32, "replicas")      # template 0 before
        self.assertIn("t = 4294967296", str(e.exception))
        with self.assertRaises(OverflowError):
            plan.get(2 ** 32)                           # a field number too
        with self.assertRaises(arachne.Error):
            plan.template_get(2 ** 31 - 1, "replicas")  # in range for C: the library says no

    def test_non_integers(self):
        c = arachne.Cluster()
        with self.assertRaises(ValueError) as e:
            c.add_nodes("h100", 2.5, 8)
        self.assertIn("count", str(e.exception))
        with self.assertRaises(TypeError) as e:
            c.add_nodes("h100", "4", 8)
        self.assertIn("count", str(e.exception))
        c.add_nodes("h100", 2.0, 8)                     # a whole float is a number of nodes
        self.assertEqual(c.gpu_count(), 16)

    def test_floats_too_big_for_a_double(self):
        c = arachne.Cluster()
        with self.assertRaises(OverflowError) as e:
            c.add_gpu_type("x1", 10 ** 400, 1e15, 1e12, 1e11, 1e10)
        self.assertIn("mem_bytes", str(e.exception))
        with self.assertRaises(TypeError) as e:
            c.add_gpu_type("x1", "80e9", 1e15, 1e12, 1e11, 1e10)
        self.assertIn("mem_bytes", str(e.exception))
        need("arachne_cost_model_create")
        cm = arachne.CostModel("llama3-8b", "h100:1x8")
        with self.assertRaises(OverflowError) as e:
            cm.set("global_batch", 10 ** 400)
        self.assertIn("global_batch", str(e.exception))

    def test_every_integer_parameter_is_checked(self):
        # Each int-like parameter of every bound function refuses one past
        # its C range before the call is made (the other arguments are None:
        # reaching C would fail differently).
        lib = arachne.load_library()
        n = 0
        for name, (_res, args) in arachne._SIGNATURES.items():
            f = getattr(lib, "_ar_" + name, None)
            if f is None:
                continue
            for i, t in enumerate(args):
                if t not in arachne._INT_RANGES:
                    continue
                lo, hi = arachne._INT_RANGES[t]
                for bad in (hi + 1, lo - 1):
                    call = [None] * len(args)
                    call[i] = bad
                    with self.assertRaises(OverflowError, msg="%s argument %d = %d" % (name, i + 1, bad)):
                        f(*call)
                    n += 1
        self.assertGreater(n, 100)


class NulTest(unittest.TestCase):
    def test_cluster_spec_with_nul(self):
        with self.assertRaises(ValueError) as e:
            arachne.Cluster.parse("h100:1x8\x00,a100:99999x8")   # planned h100:1x8 before
        self.assertIn("NUL", str(e.exception))
        self.assertIn("spec", str(e.exception))
        with self.assertRaises(ValueError):
            arachne.Cluster("h100:1x8\x00,a100:99999x8")

    def test_names_and_paths_with_nul(self):
        with self.assertRaises(ValueError):
            arachne.Model.preset("llama3-8b\x00junk")
        with self.assertRaises(ValueError):
            arachne.Model("llama3-8b\x00junk")
        with self.assertRaises(ValueError):
            arachne.Policy.load("/tmp/x\x00y.arpol")
        c = arachne.Cluster(SMALL_SPEC)
        with self.assertRaises(ValueError):
            c.save(b"/tmp/a\x00b.json")
        with self.assertRaises(ValueError):
            c.gpu_count("H100\x00")
        with self.assertRaises(ValueError):
            arachne.Cluster.from_json('{"nodes": []}\x00')


class ConstructorTest(unittest.TestCase):
    def test_cluster_from_spec_file_and_dict(self):
        c = arachne.Cluster("a100-40:4x4")
        self.assertEqual(c.gpu_count(), 16)
        d = arachne.Cluster.parse(SMALL_SPEC).to_dict()
        self.assertEqual(arachne.Cluster(d).to_string(), SMALL_SPEC)
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "c.json"
            arachne.Cluster(SMALL_SPEC).save(path)
            self.assertEqual(arachne.Cluster(path).to_string(), SMALL_SPEC)
            self.assertEqual(arachne.Cluster(str(path)).to_string(), SMALL_SPEC)
        self.assertEqual(arachne.Cluster().gpu_count(), 0)

    def test_model_from_name_file_and_dict(self):
        m = arachne.Model("llama3-8b")
        self.assertEqual(m.name, "llama3-8b")
        self.assertEqual(arachne.Model(m.to_dict()).total_params, m.total_params)
        path = os.path.join(REPO, "examples", "models")
        files = sorted(f for f in os.listdir(path) if f.endswith(".json")) if os.path.isdir(path) else []
        if files:
            self.assertGreater(arachne.Model(pathlib.Path(path, files[0])).total_params, 0)

    def test_cost_model_from_strings(self):
        need("arachne_cost_model_create", "arachne_profile_generate")
        cm = arachne.CostModel("llama3-8b", "a100-40:4x4", global_batch=64)
        self.assertEqual(cm.model.name, "llama3-8b")
        self.assertEqual(cm.cluster.gpu_count(), 16)
        self.assertEqual(cm.get("global_batch"), 64)

    def test_wrong_types_raise_type_error_at_once(self):
        bad = [(arachne.Cluster, (4,)), (arachne.Cluster, (["a100-40:4x4"],)), (arachne.Model, (None,)),
               (arachne.Model, (8,)), (arachne.Policy, (1,)), (arachne.Policy, (None,)), (arachne.Plan, (42,)),
               (arachne.Profile, (3,)), (arachne.Profile, ()), (arachne.CostModel, (1, "h100:1x8")),
               (arachne.CostModel, ("llama3-8b", 2.0)), (arachne.Decision, (None,)),
               (arachne.Trainer, ("policy.arpol",))]
        for cls, args in bad:
            with self.assertRaises(TypeError, msg="%s%r" % (cls.__name__, args)):
                cls(*args)
        with self.assertRaises(TypeError):
            arachne.CostModel("llama3-8b", "h100:1x8", profile=5)

    def test_plan_and_policy_from_paths(self):
        need("arachne_search_random", "arachne_plan_save", "arachne_policy_save")
        cm = arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32)
        plan = arachne.search_random(cm, budget=10, seed=1)
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "plan.json")
            plan.save(p)
            self.assertEqual(arachne.Plan(p).to_dict()["templates"], plan.to_dict()["templates"])
            self.assertAlmostEqual(arachne.Plan(pathlib.Path(p), cm).iteration_s, plan.iteration_s)
            pol = os.path.join(tmp, "p.arpol")
            arachne.Policy.create(seed=3).save(pol)
            self.assertEqual(arachne.Policy(pol).params, arachne.Policy.create(seed=3).params)


class BundledPolicyTest(unittest.TestCase):
    """Policy.bundled() looks where `arachne plan` does."""

    def setUp(self):
        need("arachne_policy_load", "arachne_policy_save")
        self.saved = os.environ.pop("ARACHNE_POLICY", None)

    def tearDown(self):
        os.environ.pop("ARACHNE_POLICY", None)
        if self.saved is not None:
            os.environ["ARACHNE_POLICY"] = self.saved

    def test_env_first(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "mine.arpol")
            arachne.Policy.create(seed=7, hidden=16, layers=1).save(path)
            os.environ["ARACHNE_POLICY"] = path
            self.assertEqual(arachne.Policy.bundled_path(), path)
            with arachne.Policy.bundled() as p:
                self.assertEqual(p.hidden, 16)

    def test_wrong_env_is_an_error(self):
        os.environ["ARACHNE_POLICY"] = "/nonexistent/p.arpol"
        with self.assertRaises(arachne.Error) as e:
            arachne.Policy.bundled()
        self.assertIn("ARACHNE_POLICY", e.exception.message)
        self.assertIn("/nonexistent/p.arpol", e.exception.message)

    def test_search_order(self):
        places = arachne.Policy.bundled_search()
        hows = [h for h, _ in places]
        self.assertEqual(hows[:2], ["source tree of the library", "install prefix of the library"])
        self.assertTrue(places[1][1].endswith(os.path.join("share", "arachne", "default.arpol")))
        self.assertIn("install prefix", hows)
        repo_default = os.path.join(REPO, "examples", "policies", "default.arpol")
        if os.path.exists(repo_default):
            self.assertEqual(os.path.realpath(arachne.Policy.bundled_path()), os.path.realpath(repo_default))


if __name__ == "__main__":
    unittest.main()
