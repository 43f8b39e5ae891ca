"""Handles keep what they borrow alive: parents may be dropped or closed in
any order and the children still work; everything is freed in the end."""
import gc
import random
import unittest
import weakref

from support import SMALL_SPEC, arachne, hand_plan, need


def _make_cost_model():
    model = arachne.Model.preset("llama3-8b")
    cluster = arachne.Cluster.parse(SMALL_SPEC)
    cm = arachne.CostModel(model, cluster, global_batch=32)
    return cm, weakref.ref(model), weakref.ref(cluster)


class LifetimeTest(unittest.TestCase):
    def setUp(self):
        need("arachne_cost_model_create", "arachne_profile_generate", "arachne_cost_model_get")

    def test_parents_kept_alive(self):
        cm, wmodel, wcluster = _make_cost_model()
        gc.collect()
        self.assertIsNotNone(wmodel())           # held by the cost model
        self.assertIsNotNone(wcluster())
        self.assertEqual(cm.get("global_batch"), 32)
        self.assertEqual(cm.model.total_params, 8030261248)
        self.assertEqual(cm.cluster.gpu_count(), 16)
        if arachne.has_function("arachne_plan_from_json") and arachne.has_function("arachne_cost_model_price"):
            plan = cm.plan_from_dict(hand_plan())
            cm.price(plan)
            self.assertGreater(plan.iteration_s, 0)
            wcm = weakref.ref(cm)
            del cm
            gc.collect()
            self.assertIsNotNone(wcm())          # the plan holds its cost model
            self.assertGreater(plan.to_dict()["iteration_s"], 0)
            del plan
        else:
            del cm
        gc.collect()
        self.assertIsNone(wmodel())              # all freed once the last user is gone
        self.assertIsNone(wcluster())

    def test_close_parent_first(self):
        model = arachne.Model.preset("llama3-8b")
        cluster = arachne.Cluster.parse(SMALL_SPEC)
        cm = arachne.CostModel(model, cluster)
        model.close()
        cluster.close()
        self.assertTrue(model.closed)
        with self.assertRaises(arachne.Error):
            model.total_params                   # closed for Python...
        self.assertEqual(cm.get("seq_len"), 4096)  # ...but alive in C for the cost model
        if arachne.has_function("arachne_plan_from_json"):
            self.assertGreater(cm.plan_from_dict(hand_plan()).iteration_s, 0)
        cm.close()
        self.assertIsNone(model._ptr)            # freed now
        self.assertIsNone(cluster._ptr)

    def test_random_drop_order(self):
        rng = random.Random(1234)
        objs = []
        for i in range(6):
            model = arachne.Model.preset("llama3-8b")
            cluster = arachne.Cluster.parse(SMALL_SPEC)
            profile = arachne.Profile.generate(model, cluster, seq_len=4096)
            cm = arachne.CostModel(model, cluster, profile)
            objs.extend([model, cluster, profile, cm])
        del model, cluster, profile, cm
        refs = [weakref.ref(o) for o in objs]
        while objs:
            o = objs.pop(rng.randrange(len(objs)))
            if rng.random() < 0.5:
                o.close()
            del o
            if rng.random() < 0.3:
                gc.collect()
        gc.collect()
        self.assertTrue(all(r() is None for r in refs))


if __name__ == "__main__":
    unittest.main()
