"""arachne.CostModel: construction with and without a profile, setup
keywords and options, errors, the guard on borrowed handles."""
import unittest

from support import SMALL_SPEC, arachne, need


class CostModelTest(unittest.TestCase):
    def setUp(self):
        need("arachne_cost_model_create", "arachne_cost_model_set", "arachne_cost_model_get",
             "arachne_profile_generate")
        self.model = arachne.Model.preset("llama3-8b")
        self.cluster = arachne.Cluster.parse(SMALL_SPEC)

    def test_defaults(self):
        with arachne.CostModel(self.model, self.cluster) as cm:
            s = cm.setup
            self.assertEqual(set(s), set(arachne.OPTIONS))
            self.assertEqual(s["global_batch"], 512)
            self.assertEqual(s["seq_len"], 4096)
            self.assertEqual(s["recompute"], "selective")
            self.assertTrue(s["dist_optimizer"])
            self.assertTrue(s["overlap_grad_reduce"])
            self.assertTrue(s["overlap_param_gather"])
            self.assertFalse(s["tp_comm_overlap"])
            self.assertEqual(s["max_vp"], 8)
            self.assertEqual(s["exact_division"], 0)
            self.assertAlmostEqual(s["headroom"], 0.08)
            self.assertEqual(cm.get("weight_bytes"), 2)
            self.assertIs(cm.model, self.model)
            self.assertIs(cm.cluster, self.cluster)
            self.assertEqual(cm.profile.seq_len, 4096)
            self.assertEqual(cm.profile.model_name, "llama3-8b")

    def test_setup_keywords(self):
        cm = arachne.CostModel(self.model, self.cluster, global_batch=256, seq_len=2048, recompute="full",
                               dist_optimizer=True, headroom=0.1, expert_tiling=False, max_depth=4)
        self.assertEqual(cm.get("global_batch"), 256)
        self.assertEqual(cm.get("seq_len"), 2048)
        self.assertEqual(cm.profile.seq_len, 2048)
        self.assertEqual(cm.get("recompute"), arachne.RECOMPUTE_FULL)
        self.assertEqual(cm.get(arachne.OPTIONS["dist_optimizer"]), 1)
        self.assertAlmostEqual(cm.get("headroom"), 0.1)
        self.assertEqual(cm.setup["expert_tiling"], False)
        self.assertEqual(cm.get("max_depth"), 4)
        self.assertIs(cm.set("global_batch", 1024), cm)
        self.assertEqual(cm.get("global_batch"), 1024)
        cm.set("recompute", "none")
        self.assertEqual(cm.setup["recompute"], "none")
        cm.set("exact_division", True)
        self.assertEqual(cm.get("exact_division"), 1)
        self.assertEqual(cm.setup["exact_division"], 1)
        cm.set("exact_division", 2)  # an int option: 0, 1 or 2
        self.assertEqual(cm.setup["exact_division"], 2)
        with self.assertRaises(arachne.Error):
            cm.set("exact_division", 3)

    def test_given_profile(self):
        p = arachne.Profile.generate(self.model, self.cluster, seq_len=1024)
        cm = arachne.CostModel(self.model, self.cluster, p)
        self.assertIs(cm.profile, p)
        self.assertEqual(cm.get("seq_len"), 1024)
        with self.assertRaises(arachne.Error) as e:         # must equal the profile's
            arachne.CostModel(self.model, self.cluster, p, seq_len=4096)
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)
        self.assertIn("4096", e.exception.message)

    def test_errors(self):
        with self.assertRaises(TypeError):
            arachne.CostModel(self.model, self.cluster, batch=3)
        with self.assertRaises(TypeError):
            arachne.CostModel(self.cluster, self.model)
        cm = arachne.CostModel(self.model, self.cluster)
        for opt, bad in (("headroom", 1.5), ("global_batch", 0), ("global_batch", 2.5), ("max_depth", 99),
                         ("recompute", 7)):
            with self.assertRaises(arachne.Error) as e:
                cm.set(opt, bad)
            self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT, opt)
            self.assertTrue(e.exception.message)
        self.assertEqual(cm.get("global_batch"), 512)       # unchanged
        with self.assertRaises(arachne.Error):
            cm.set("no_such_option", 1)
        with self.assertRaises(arachne.Error):
            cm.set(99, 1)
        with self.assertRaises(arachne.Error) as e:         # a profile for another model
            other = arachne.Profile.generate(arachne.Model.preset("qwen3-8b"), self.cluster)
            arachne.CostModel(self.model, self.cluster, other)
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)

    def test_borrowed_handles_are_frozen(self):
        cm = arachne.CostModel(self.model, self.cluster)
        with self.assertRaises(arachne.Error) as e:
            self.cluster.add_nodes("h100", 1, 8)
        self.assertIn("borrowed", e.exception.message)
        with self.assertRaises(arachne.Error):
            cm.profile.add("h100", "dense", 1, 1, 1.0, 1.0)
        self.assertEqual(self.cluster.gpu_count(), 16)
        cm.close()
        cm.close()
        self.cluster.add_nodes("h100", 1, 8)                # free again
        self.assertEqual(self.cluster.gpu_count(), 24)
        with self.assertRaises(arachne.Error):
            cm.get("global_batch")


if __name__ == "__main__":
    unittest.main()


class ParallelConfigTest(unittest.TestCase):
    """CostModel.plan_from_parallel: the configuration a team already runs."""

    def test_spec_and_keywords_agree(self):
        with arachne.CostModel("llama3-8b", "h100:4x8") as cm:
            a = cm.plan_from_parallel("tp=2,pp=2,dp=8,mbs=1")
            b = cm.plan_from_parallel(tp=2, pp=2, dp=8, mbs=1)
            self.assertEqual(a.to_json(), b.to_json())
            self.assertEqual(a.gpus_used, 32)
            t = a.to_dict()["templates"][0]
            self.assertEqual((len(t["stages"]), t["replicas"], t["micro_batch"]), (2, 8, 1))
            c = cm.plan_from_parallel(tp=1, pp=2, dp=16, layers=[14, 18])
            self.assertEqual(c.to_dict()["templates"][0]["stages"][0]["layers"], [0, 14])

    def test_context_parallel(self):
        # tp x cp GPUs per stage: 4 x 2 x 2 stages x 2 replicas = the 32 GPUs; the template
        # reports cp, the ranks carry cp_rank, the option turns the planner's CP off
        with arachne.CostModel("llama3-8b", "h100:4x8") as cm:
            p = cm.plan_from_parallel(tp=4, cp=2, pp=2)
            t = p.to_dict()["templates"][0]
            self.assertEqual((t["cp"], t["replicas"], p.template_get(0, "cp")), (2, 2, 2))
            self.assertEqual(sorted({r["cp_rank"] for r in t["ranks"]}), [0, 1])
            self.assertEqual(p.gpus_used, 32)
            q = cm.plan_from_parallel(tp=4, pp=2, dp=4)
            self.assertEqual(q.template_get(0, "cp"), 1)
            self.assertNotIn("cp", q.to_dict()["templates"][0])
            self.assertEqual(cm.get("context_parallel"), 1)
            cm.set("context_parallel", 0)
            self.assertEqual(cm.get("context_parallel"), 0)

    def test_interleaved_configuration(self):
        with arachne.CostModel("llama3-8b", "h100:4x8") as cm:
            plain = cm.plan_from_parallel(tp=1, pp=4, dp=8)
            inter = cm.plan_from_parallel(tp=1, pp=4, vp=2, dp=8)
            self.assertEqual(plain.template_get(0, "vp"), 1)
            self.assertEqual(inter.template_get(0, "vp"), 2)
            self.assertEqual(inter.to_dict()["templates"][0]["vp"], 2)
            self.assertNotIn("vp", plain.to_dict()["templates"][0])
            self.assertLess(inter.iteration_s, plain.iteration_s)
            with self.assertRaises(arachne.Error) as e:
                cm.plan_from_parallel(tp=1, pp=4, vp=3, dp=8)
            self.assertIn("12 chunks", str(e.exception))

    def test_bad_configurations_raise(self):
        with arachne.CostModel("llama3-8b", "h100:4x8") as cm:
            cm.set("global_batch", 500)
            with self.assertRaises(arachne.Error) as e:
                cm.plan_from_parallel("tp=2,pp=2,dp=8")
            self.assertIn("496 or 504", str(e.exception))
            cm.set("global_batch", 512)
            # cp=3: 4096 tokens do not split into 2 x 3 load-balanced chunks
            for bad in ("tp=3", "cp=3", "vp=2", "nope=1", "tp=2,pp=2,dp=16", "tp=2,cp=2,pp=2,dp=8"):
                with self.assertRaises(arachne.Error):
                    cm.plan_from_parallel(bad)
            with self.assertRaises(TypeError):
                cm.plan_from_parallel(tp="2x")
            with self.assertRaises(TypeError):
                cm.plan_from_parallel("tp=2", pp=2)
