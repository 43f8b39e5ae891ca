"""arachne.Policy: creation, info, files, metadata, planning, the bundled policy."""
import json
import os
import tempfile
import unittest

from support import SMALL_SPEC, arachne, need, read

POLICY = ("arachne_policy_create", "arachne_policy_info", "arachne_policy_destroy")


class PolicyTest(unittest.TestCase):
    def setUp(self):
        need(*POLICY)

    def test_create_and_info(self):
        with arachne.Policy.create(seed=1) as p:
            self.assertGreater(p.params, 0)
            self.assertEqual(p.hidden, 128)
            self.assertEqual(p.layers, 2)
            self.assertGreater(p.state_dim, 0)
            self.assertEqual(p.train_steps, 0)
            self.assertEqual(p.info("params"), p.params)
        small = arachne.Policy.create(seed=1, hidden=32, layers=1)
        self.assertEqual(small.hidden, 32)
        self.assertLess(small.params, arachne.Policy.create(seed=1).params)
        with self.assertRaises(arachne.Error) as e:
            arachne.Policy.create(seed=1, hidden=-5)
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)

    def test_files(self):
        need("arachne_policy_save", "arachne_policy_load")
        with tempfile.TemporaryDirectory() as tmp:
            a, b, c = [os.path.join(tmp, n) for n in ("a.arpol", "b.arpol", "c.arpol")]
            arachne.Policy.create(seed=5).save(a)
            arachne.Policy.create(seed=5).save(b)
            arachne.Policy.create(seed=6).save(c)
            self.assertEqual(read(a, "rb"), read(b, "rb"))   # same seed, same bytes
            self.assertNotEqual(read(a, "rb"), read(c, "rb"))
            q = arachne.Policy.load(a)
            self.assertEqual(q.params, arachne.Policy.create(seed=5).params)
            data = bytearray(read(a, "rb"))
            data[len(data) // 2] ^= 0xFF
            with open(c, "wb") as f:
                f.write(bytes(data))
            with self.assertRaises(arachne.Error) as e:
                arachne.Policy.load(c)
            self.assertEqual(e.exception.status, arachne.E_CORRUPT)
            self.assertTrue(e.exception.message)
        with self.assertRaises(arachne.Error) as e:
            arachne.Policy.load("/nonexistent/p.arpol")
        self.assertEqual(e.exception.status, arachne.E_IO)

    def test_metadata(self):
        need("arachne_policy_metadata", "arachne_policy_set_metadata")
        p = arachne.Policy.create(seed=2)
        self.assertEqual(p.metadata, "")
        p.metadata = {"note": "test", "steps": 3}
        self.assertEqual(json.loads(p.metadata), {"note": "test", "steps": 3})

    def test_bundled(self):
        need("arachne_policy_load")
        path = arachne.Policy.bundled_path()
        if path is None:
            with self.assertRaises(arachne.Error) as e:
                arachne.Policy.bundled()
            self.assertEqual(e.exception.status, arachne.E_NOT_FOUND)
        else:
            with arachne.Policy.bundled() as p:
                self.assertGreater(p.params, 0)


class PolicyPlanTest(unittest.TestCase):
    def setUp(self):
        need(*(POLICY + ("arachne_plan_build", "arachne_cost_model_create", "arachne_profile_generate",
                         "arachne_plan_to_json", "arachne_plan_get")))

    def test_plan(self):
        cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse(SMALL_SPEC),
                               global_batch=64)
        pol = arachne.Policy.create(seed=3)
        plan = pol.plan(cm)
        self.assertIs(plan.cost_model, cm)
        self.assertGreater(plan.iteration_s, 0)
        d = plan.to_dict()
        self.assertEqual(d["planner"]["method"], plan.method)
        self.assertIn("policy", plan.method)
        best = pol.plan(cm, samples=4, seed=9)
        self.assertGreaterEqual(best.iter_per_s, plan.iter_per_s * (1 - 1e-12))  # greedy plan is among the 4
        again = pol.plan(cm, samples=4, seed=9)
        a, b = best.to_dict(), again.to_dict()
        a["planner"].pop("planning_s", None)
        b["planner"].pop("planning_s", None)
        self.assertEqual(a, b)

    def test_plan_chooses_the_recompute_mode_when_asked(self):
        # qwen3-30b-a3b on 22 single-GPU L40S nodes, batch 512: full
        # recomputation plans faster than selective (make_tight.py 60 7, no. 25)
        pol = arachne.Policy.create(seed=1)
        cm = arachne.CostModel("qwen3-30b-a3b", "l40s:22x1", global_batch=512)
        self.assertEqual(cm.setup["recompute_search"], 1)
        cm.set("recompute_search", 0)
        sel = pol.plan(cm, samples=4, seed=7)
        self.assertEqual(sel.recompute, arachne.RECOMPUTE_MODES["selective"])
        for search in (1, 2):
            cm.set("recompute_search", search)
            for refine in (0, 40):
                chosen = pol.plan(cm, samples=4, seed=7, refine=refine)
                self.assertEqual(chosen.recompute, arachne.RECOMPUTE_MODES["full"])
                self.assertEqual(chosen.to_dict()["setup"]["recompute"], "full")
        self.assertGreater(pol.plan(cm, samples=4, seed=7).iter_per_s, sel.iter_per_s)
        self.assertEqual(cm.get("recompute"), arachne.RECOMPUTE_MODES["selective"])  # the cost model keeps its mode
        with self.assertRaises(arachne.Error):
            cm.set("recompute_search", 3)

    def test_plan_rollout(self):
        need("arachne_plan_rollout")
        cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse(SMALL_SPEC),
                               global_batch=64)
        pol = arachne.Policy.create(seed=3)
        greedy = pol.plan(cm)
        ro = pol.plan_rollout(cm)
        self.assertEqual(ro.method, "policy-rollout")
        self.assertGreaterEqual(ro.iter_per_s, greedy.iter_per_s * (1 - 1e-12))  # never slower than greedy
        self.assertGreater(ro.evaluations, greedy.evaluations)
        capped = pol.plan_rollout(cm, evaluations=1)  # spent before the first decision: the greedy plan
        self.assertEqual(capped.iter_per_s, greedy.iter_per_s)
        with self.assertRaises(arachne.Error) as e:
            pol.plan_rollout(cm, evaluations=-1)
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)
        self.assertIn("evaluations", e.exception.message)
        with self.assertRaises(TypeError):
            pol.plan_rollout(cm, evaluations="many")
        with self.assertRaises(arachne.Error) as e:
            pol.plan_rollout(cm, time_cap_s=-1.0)
        self.assertIn("time_cap_s", e.exception.message)
        cut = pol.plan_rollout(cm, time_cap_s=1e-12)  # spent before the first decision
        self.assertEqual(cut.method, "policy-rollout-capped")
        self.assertEqual(cut.iter_per_s, greedy.iter_per_s)


if __name__ == "__main__":
    unittest.main()
