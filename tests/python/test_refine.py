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
