"""Plan.refine / Policy.plan(refine=...): never slower than the start, the same
result twice, bad budgets raise."""
import unittest

from support import arachne, need


class RefineTest(unittest.TestCase):
    def setUp(self):
        need("arachne_plan_refine", "arachne_plan_build", "arachne_policy_create")
        self.cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse("a100-40:4x4,a6000:4x4"))
        self.pol = arachne.Policy.create(seed=5, hidden=16, layers=1)

    def test_refine_never_loses_and_is_repeatable(self):
        start = self.pol.plan(self.cm)
        a = start.refine(self.cm, 200)
        b = self.pol.plan(self.cm, refine=200)
        self.assertGreaterEqual(a.iter_per_s, start.iter_per_s)
        self.assertEqual(a.iter_per_s, b.iter_per_s)
        self.assertEqual(a.evaluations, b.evaluations)
        self.assertTrue(a.to_dict()["planner"]["method"].endswith("+refine"))

    def test_bad_budget_raises(self):
        start = self.pol.plan(self.cm)
        with self.assertRaises(arachne.Error):
            start.refine(self.cm, -1)


if __name__ == "__main__":
    unittest.main()
