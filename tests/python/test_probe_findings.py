"""What a hostile probe of the binding found (2026-12-06), one test each: a
trainer closed during run() was freed under the C call, a cost model of a
live trainer could be changed, handles of the wrong class leaked ctypes
errors, status_string() wrapped huge integers, replan rounded its integer
options, plan_from_parallel's gpu= could inject keys, and the policy's
metadata took text that its next save refused."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from support import REPO, arachne, need


def small_trainer():
    t = arachne.Trainer(arachne.Policy.create(1, hidden=16, layers=1), group_size=2)
    cm = arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32)
    t.add_composition(cm)
    return t, cm


class TrainerCloseTest(unittest.TestCase):
    def test_close_from_the_callback_does_not_free_it_under_run(self):
        # a child process: before the fix this was a segmentation fault
        need("arachne_trainer_create")
        code = textwrap.dedent("""
            import sys
            sys.path.insert(0, %r)
            import arachne
            t = arachne.Trainer(arachne.Policy.create(1, hidden=16, layers=1), group_size=2)
            t.add_composition(arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32))
            try:
                t.run(2, lambda *a: t.close())
            except arachne.Error as e:
                print("error:", e)
            print("alive", t.closed)
        """ % os.path.join(REPO, "python"))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ))
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("alive True", r.stdout)


class TrainerCostModelTest(unittest.TestCase):
    def test_a_composition_does_not_change_while_its_trainer_lives(self):
        need("arachne_trainer_create")
        t, cm = small_trainer()
        with self.assertRaises(arachne.Error) as e:
            cm.set("global_batch", 64)
        self.assertIn("Trainer", str(e.exception))
        self.assertEqual(cm.get("global_batch"), 32)
        t.close()
        cm.set("global_batch", 64)   # free to change again
        self.assertEqual(cm.get("global_batch"), 64)


class HandleTypeTest(unittest.TestCase):
    def test_wrong_handles_raise_type_error_naming_the_call(self):
        need("arachne_plan_build")
        cm = arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32)
        po = arachne.Policy.create(1, hidden=16, layers=1)
        plan = po.plan(cm)
        cases = [
            (lambda: po.plan(plan), "Policy.plan", "CostModel"),
            (lambda: po.plan(None), "Policy.plan", "NoneType"),
            (lambda: cm.price(cm), "CostModel.price", "Plan"),
            (lambda: arachne.search_random(po), "search_random", "CostModel"),
            (lambda: plan.refine("x"), "Plan.refine", "str"),
        ]
        for call, where, what in cases:
            with self.assertRaises(TypeError) as e:
                call()
            self.assertIn(where, str(e.exception))
            self.assertIn(what, str(e.exception))


class IntegerTest(unittest.TestCase):
    def test_status_string_is_range_checked(self):
        self.assertEqual(arachne.status_string(0), "ok")
        with self.assertRaises(OverflowError):
            arachne.status_string(2 ** 40)     # 'ok' before (wrapped)
        with self.assertRaises(ValueError):
            arachne.status_string(-1.9)        # truncated to -1 before

    def test_replan_integer_options_are_exact(self):
        need("arachne_replan")
        po = arachne.Policy.create(1, hidden=16, layers=1)
        cm = arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32)
        cm2 = arachne.CostModel("llama3-8b", "h100:1x8,a100-40:1x4", global_batch=32)
        running = po.plan(cm)
        with self.assertRaises(OverflowError) as e:
            arachne.replan(po, cm2, running, samples=2, seed=2 ** 53 + 1)   # ran as 2**53 before
        self.assertIn("seed", str(e.exception))
        plan, dec = arachne.replan(po, cm2, running, samples=2, seed=2 ** 53)
        self.assertGreater(plan.iter_per_s, 0)


class PlanFromParallelTest(unittest.TestCase):
    def test_gpu_is_a_name_not_more_keys(self):
        cm = arachne.CostModel("llama3-8b", "h100:1x8", global_batch=32)
        with self.assertRaises(ValueError):
            cm.plan_from_parallel(tp=1, pp=1, dp=8, mbs=1, gpu="h100,dp=4,tp=2")
        with self.assertRaises(TypeError):
            cm.plan_from_parallel(tp=8, pp=1, dp=1, mbs=1, gpu=5)
        self.assertGreater(cm.plan_from_parallel(tp=8, pp=1, dp=1, mbs=1, gpu="h100").iter_per_s, 0)


class MetadataTest(unittest.TestCase):
    def test_metadata_is_checked_when_set(self):
        po = arachne.Policy.create(1, hidden=16, layers=1)
        po.metadata = '{"run": 1}'
        for bad in ("not json", "[" * 100 + "]" * 100, '{"a": 1} trailing'):
            with self.assertRaises(arachne.Error) as e:
                po.metadata = bad
            self.assertIn("metadata", str(e.exception))
        with self.assertRaises(ValueError):
            po.metadata = float("nan")
        self.assertEqual(json.loads(po.metadata), {"run": 1})   # unchanged by the refusals
        with tempfile.TemporaryDirectory() as d:
            po.save(os.path.join(d, "p.arpol"))                  # what was accepted saves
        po.metadata = ""
        self.assertEqual(po.metadata, "")


class PlanOpenTest(unittest.TestCase):
    def test_a_plan_file_is_rebuilt_from_what_it_embeds_and_names_no_paths(self):
        need("arachne_plan_file_header", "arachne_plan_save", "arachne_plan_load")
        model = arachne.Model.from_json(json.dumps({
            "format": "arachne-model", "version": 1, "name": "tiny-custom", "blocks": 4, "hidden": 1024,
            "heads": 8, "kv_heads": 8, "head_dim": 128, "ffn": 4096, "vocab": 32000}))
        cluster = arachne.Cluster.parse("h100:1x8")
        cm = arachne.CostModel(model, cluster, arachne.Profile.generate(model, cluster, 4096), global_batch=32,
                               weight_bytes=4, overlap_grad_reduce=False)
        plan = arachne.search_random(cm, 20, seed=1)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "plan.json")
            plan.save(path)
            h = arachne.Plan.read_header(path)
            self.assertIn("tiny-custom", h["model_json"])
            self.assertEqual(h["weight_bytes"], 4.0)
            self.assertFalse(h["overlap_grad_reduce"])
            back = arachne.Plan.open(path)      # the embedded model, cluster, profile and setup
            self.assertEqual(back.iteration_s, plan.iteration_s)
            self.assertEqual(back.cost_model.get("weight_bytes"), 4.0)
            # a version-1 plan names its model; a path there is not opened
            model_file = os.path.join(d, "model.json")
            model.save(model_file)
            with open(path) as f:
                doc = json.loads(f.read())
            doc.pop("inputs", None)
            doc["version"] = 1
            doc["model"] = model_file
            with open(path, "w") as f:
                f.write(json.dumps(doc))
            with self.assertRaises(arachne.Error) as e:
                arachne.Plan.open(path)
            self.assertIn("model.json", str(e.exception))


if __name__ == "__main__":
    unittest.main()
