"""Plan.refine / Policy.plan(refine=...): never slower than the start, the same
result twice, plans that run the batch exactly ranked first, bad budgets raise."""
import unittest

from support import arachne, need


class RefineTest(unittest.TestCase):
    def setUp(self):
        need("arachne_plan_refine", "arachne_plan_build", "arachne_policy_create")
        self.cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse("a100-40:4x4,a6000:4x4"))
        self.pol = arachne.Policy.create(seed=5, hidden=16, layers=1)

    def test_refine_never_loses_and_is_repeatable(self):
        # the refinement alone: the recompute probe (test_policy) would add
        # its own evaluations to both counts
        self.cm.set("recompute_search", 0)
        start = self.pol.plan(self.cm)
        a = start.refine(self.cm, 200)
        b = self.pol.plan(self.cm, refine=200)
        self.assertGreaterEqual(a.iter_per_s, start.iter_per_s)
        self.assertEqual(a.iter_per_s, b.iter_per_s)
        self.assertEqual(a.evaluations, b.evaluations)
        self.assertTrue(a.to_dict()["planner"]["method"].endswith("+refine"))

    def test_planning_again_for_the_asked_batch(self):
        # docs/python.md's recipe: the bundled policy's best plan here is
        # interleaved and runs 260 of 256 samples (steps of 20); with
        # exact_division the planner ranks exact plans first, and the first
        # plan refined under it runs 256 too
        import os
        path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "policies", "default.arpol")
        if not os.path.exists(path):
            self.skipTest("the bundled policy is not in this tree")
        pol = arachne.Policy.load(path)
        with arachne.CostModel("llama3-8b", "h100:2x4,gh-96:1x4,b200:2x4", global_batch=256) as cm:
            first = pol.plan(cm, samples=16, seed=0, refine=arachne.REFINE_EVALUATIONS)
            self.assertEqual(first.get("samples_run"), 260)
            cm.set("exact_division", True)
            again = pol.plan(cm, samples=16, seed=0, refine=arachne.REFINE_EVALUATIONS)
            refined = first.refine(cm)
            self.assertEqual(again.get("samples_run"), 256)
            self.assertEqual(refined.get("samples_run"), 256)
            # what `arachne plan --max-vp 8` prints here: the faster of the two
            self.assertGreater(refined.iter_per_s, again.iter_per_s)
            # exact_division 2: the library takes these steps itself
            cm.set("exact_division", 2)
            plan = pol.plan(cm, samples=16, seed=0, refine=arachne.REFINE_EVALUATIONS)
            self.assertEqual(plan.get("samples_run"), 256)
            self.assertEqual(plan.iter_per_s, refined.iter_per_s)
            self.assertGreater(plan.evaluations, first.evaluations + again.evaluations)

    def test_exact_batches_rank_first(self):
        # three 8-GPU nodes at batch 64: the fastest plan (3 replicas) runs 72 samples
        with arachne.CostModel("llama3-8b", "h100:3x8") as cm:
            cm.set("max_depth", 4).set("global_batch", 64)
            self.assertEqual(cm.get("exact_batch"), 1)
            exact = arachne.search_exhaustive(cm, max_templates=1)
            self.assertEqual((exact.get("samples_run"), exact.get("global_batch")), (64, 64))
            cm.set("exact_batch", 0)
            fast = arachne.search_exhaustive(cm, max_templates=1)
            self.assertEqual(fast.get("samples_run"), 72)
            # the exact plan is the fast one split: 2 replicas x 3 micro-batches + 1 x 2, same speed
            self.assertEqual(exact.get("templates"), 2)
            self.assertGreater(exact.iter_per_s, 0.999 * fast.iter_per_s)
            cm.set("exact_batch", 1)
            self.assertEqual(fast.refine(cm, 100).get("samples_run"), 64)
            with self.assertRaises(arachne.Error):
                cm.set("exact_batch", 2)

    def test_bad_budget_raises(self):
        start = self.pol.plan(self.cm)
        with self.assertRaises(arachne.Error):
            start.refine(self.cm, -1)


if __name__ == "__main__":
    unittest.main()
