"""arachne.replan and arachne.Decision: keep on an unchanged cluster, switch
after a node joins, the decision's getters against its JSON, lifetimes."""
import unittest

from support import SMALL_SPEC, arachne, need

REPLAN = ("arachne_replan", "arachne_replan_get", "arachne_replan_to_json", "arachne_replan_options_create",
          "arachne_plan_build", "arachne_policy_create", "arachne_cost_model_create", "arachne_profile_generate")
GROWN_SPEC = "a100-40:2x4,h100:2x8"   # SMALL_SPEC plus one H100 node
DECISION_KEYS = {"format", "version", "action", "reason", "explanation", "cluster", "running_valid",
                 "gpus_left", "old_samples_per_s", "new_samples_per_s", "horizon_s", "restart_s",
                 "migration_s", "cost_s", "samples_gained", "samples_lost", "net_samples", "bytes_moved",
                 "slowest_rank", "idle_gpus", "migration"}


def cost_model(spec):
    return arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse(spec), global_batch=64)


class ReplanTest(unittest.TestCase):
    def setUp(self):
        need(*REPLAN)
        self.policy = arachne.Policy.create(seed=1, hidden=32, layers=1)
        self.cm = cost_model(SMALL_SPEC)
        self.running = self.policy.plan(self.cm)

    def test_unchanged_cluster_keeps(self):
        plan, d = arachne.replan(self.policy, self.cm, self.running)
        with d:
            self.assertTrue(d.keep)
            self.assertFalse(d.switch)
            self.assertEqual(d.action, "keep")
            self.assertIn(d.reason, ("not-faster", "gain-too-small"))
            self.assertEqual(d.running_valid, 1)
            self.assertEqual(d.gpus_left, 0)
            self.assertEqual(d.horizon_s, 1800)                  # library defaults
            self.assertEqual(d.restart_s, 20)
            self.assertTrue(d.explanation.startswith("keep:"))
            self.assertAlmostEqual(d.old_samples_per_s, self.running.samples_per_s, places=6)
            self.assertLessEqual(d.gain, 0)
            self.assertAlmostEqual(plan.iteration_s, self.running.iteration_s, places=9)
            self.assertIs(plan.cost_model, self.cm)
            j = d.to_dict()
            self.assertEqual(j["format"], "arachne-replan")
            self.assertEqual(j["action"], "keep")
        self.assertTrue(d.closed)
        with self.assertRaises(arachne.Error):
            d.action

    def test_added_node(self):
        cm2 = cost_model(GROWN_SPEC)
        plan, d = arachne.replan(self.policy, cm2, self.running, horizon_s=3600, restart_cost_s=10,
                                 samples=2, seed=4)
        _, d_refined = arachne.replan(self.policy, cm2, self.running, horizon_s=3600, restart_cost_s=10,
                                      samples=2, seed=4, refine_evaluations=100)
        # the new plan (whatever the decision) is never slower once refined
        self.assertGreaterEqual(d_refined.new_samples_per_s, d.new_samples_per_s)
        with self.assertRaises(arachne.Error):
            arachne.replan(self.policy, cm2, self.running, refine_evaluations=-1)
        self.assertEqual(plan.gpus_total, 24)
        self.assertGreater(plan.samples_per_s, 0)
        self.assertGreater(plan.num_ranks, 0)
        self.assertIs(plan.cost_model, cm2)
        self.assertEqual(plan.to_dict()["cluster"], GROWN_SPEC)
        j = d.to_dict()
        self.assertEqual(set(j), DECISION_KEYS)
        self.assertEqual((j["format"], j["version"]), ("arachne-replan", 1))
        self.assertEqual(j["action"], d.action)
        self.assertEqual(j["reason"], d.reason)
        self.assertEqual(j["explanation"], d.explanation)
        self.assertEqual(j["horizon_s"], 3600)
        self.assertEqual(j["restart_s"], 10)
        self.assertEqual(d.horizon_s, 3600)
        self.assertAlmostEqual(d.cost_s, d.migration_s + d.restart_s)
        self.assertAlmostEqual(j["net_samples"], d.gain)
        self.assertAlmostEqual(d.net_samples, d.samples_gained - d.samples_lost, places=3)
        self.assertEqual(j["bytes_moved"], d.bytes_moved)
        self.assertEqual(j["slowest_rank"], d.slowest_rank)
        self.assertEqual(d.running_valid, 1)                      # nothing left, the old GPUs remain
        self.assertEqual(d.idle_gpus, d.idle())
        self.assertEqual(d.idle_gpus, sum(j["idle_gpus"].values()))
        self.assertEqual(d.idle_gpus, 24 - plan.gpus_used)
        migs = d.migrations()
        self.assertEqual(len(migs), d.num_migrations)
        self.assertEqual(migs, j["migration"])                    # getters agree with the JSON
        self.assertEqual(sum(m["bytes"] for m in migs), d.bytes_moved)
        for m in migs:
            self.assertIn(m["link"], ("intra", "inter", "checkpoint"))
            self.assertLess(m["first_layer"], m["end_layer"])
        if d.switch:
            self.assertGreater(d.gain, 0)
            self.assertTrue(d.explanation.startswith("switch:"))
        want = d.new_samples_per_s if d.switch else d.old_samples_per_s
        self.assertAlmostEqual(plan.samples_per_s, want, places=6)  # the plan to run from now on
        with self.assertRaises(arachne.Error) as e:
            d.migration_get(len(migs), "bytes")
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)
        with self.assertRaises(arachne.Error) as e:
            d.idle("no-such-gpu")
        self.assertEqual(e.exception.status, arachne.E_NOT_FOUND)

    def test_bad_options_and_lifetimes(self):
        with self.assertRaises(arachne.Error) as e:
            arachne.replan(self.policy, self.cm, self.running, horizon_s=-1)
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)
        self.assertIn("horizon", e.exception.message.lower())
        with self.assertRaises(TypeError):
            arachne.replan(self.policy, self.cm, "plan.json")
        plan, d = arachne.replan(self.policy, cost_model(GROWN_SPEC), self.running)
        self.running.close()                                      # the decision keeps it alive
        del self.running
        self.assertIn(d.action, ("keep", "switch"))
        self.assertTrue(d.to_json().startswith("{"))
        self.assertIn("Decision(action=", repr(d))


if __name__ == "__main__":
    unittest.main()
