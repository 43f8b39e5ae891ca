"""arachne.Plan through the searches: the plan JSON v1 fields, getters that
agree with it, determinism, files, reading plans back, export, repricing,
errors."""
import json
import os
import tempfile
import unittest

from support import SMALL_SPEC, arachne, hand_plan, need, read

PLAN_FUNCS = ("arachne_plan_to_json", "arachne_plan_get", "arachne_plan_template_get", "arachne_plan_stage_get",
              "arachne_plan_stage_gpu", "arachne_plan_rank_get", "arachne_plan_method", "arachne_plan_destroy")
BASE = ("arachne_cost_model_create", "arachne_profile_generate")


def make_plan(cm, seed=7):
    """A plan for cm: random search when the library has it, else hand_plan() read back."""
    if arachne.has_function("arachne_search_random"):
        return arachne.search_random(cm, budget=40, seed=seed)
    return cm.plan_from_dict(hand_plan())


class PlanTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cm = None
        if all(arachne.has_function(n) for n in BASE + PLAN_FUNCS + ("arachne_plan_from_json",)):
            cls.cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse(SMALL_SPEC),
                                       global_batch=64)
            cls.plan = make_plan(cls.cm)
            cls.method = "random" if arachne.has_function("arachne_search_random") else "hand"

    def setUp(self):
        need(*(BASE + PLAN_FUNCS + ("arachne_plan_from_json",)))

    def test_dict_fields(self):
        d = self.plan.to_dict()
        for k in ("format", "version", "model", "cluster", "global_batch", "seq_len", "iteration_s", "iter_per_s",
                  "samples_per_s", "tokens_per_s", "mfu", "gpus_used", "gpus_total", "templates", "planner"):
            self.assertIn(k, d)
        self.assertEqual(d["format"], "arachne-plan")
        self.assertEqual(d["version"], 2)
        self.assertEqual(d["model"], "llama3-8b")
        self.assertEqual(d["cluster"], SMALL_SPEC)
        self.assertEqual(d["global_batch"], 64)
        self.assertEqual(d["seq_len"], 4096)
        self.assertEqual(d["gpus_total"], 16)
        self.assertGreater(d["iteration_s"], 0)
        self.assertAlmostEqual(d["iter_per_s"] * d["iteration_s"], 1.0, places=9)
        self.assertAlmostEqual(d["samples_per_s"], 64 * d["iter_per_s"], delta=1e-9 * d["samples_per_s"])
        self.assertAlmostEqual(d["tokens_per_s"], 4096 * d["samples_per_s"], delta=1e-9 * d["tokens_per_s"])
        self.assertGreater(d["mfu"], 0)
        self.assertLessEqual(d["mfu"], 1)
        self.assertEqual(d["planner"]["method"], self.method)
        used = 0
        for t in d["templates"]:
            for k in ("replicas", "micro_batch", "micro_batches", "stages", "ranks"):
                self.assertIn(k, t)
            end = 0
            for s in t["stages"]:
                for k in ("gpu", "tp", "layers", "ep", "etp", "edp", "stage_s", "memory_bytes"):
                    self.assertIn(k, s)
                self.assertIn(s["gpu"], ("A100-40", "H100"))
                self.assertEqual(s["layers"][0], end)       # layers covered in order
                end = s["layers"][1]
                self.assertEqual(s["ep"] * s["etp"] * s["edp"], s["tp"] * t.get("cp", 1) * t["replicas"])
                self.assertLessEqual(s["memory_bytes"], arachne.gpu_get(s["gpu"], "memory_bytes"))
            self.assertEqual(end, 32)
            self.assertEqual(len(t["ranks"]), t["replicas"] * t.get("cp", 1) * sum(s["tp"] for s in t["stages"]))
            for r in t["ranks"]:
                want = {"rank", "node", "gpu", "replica", "stage", "tp_rank"} | ({"cp_rank"} if "cp" in t else set())
                self.assertEqual(set(r), want)
            used += len(t["ranks"])
        self.assertEqual(used, d["gpus_used"])
        self.assertLessEqual(d["gpus_used"], 16)

    def test_getters_agree_with_dict(self):
        p, d = self.plan, self.plan.to_dict()
        for k in ("iteration_s", "iter_per_s", "samples_per_s", "tokens_per_s", "mfu", "gpus_used", "gpus_total",
                  "global_batch", "seq_len"):
            self.assertEqual(getattr(p, k), d[k], k)
        self.assertIsInstance(p.gpus_used, int)
        self.assertEqual(p.num_templates, len(d["templates"]))
        self.assertEqual(p.num_ranks, d["gpus_used"])
        self.assertEqual(p.method, self.method)
        self.assertEqual(p.evaluations, d["planner"]["evaluations"])
        for t, td in enumerate(d["templates"]):
            tg = p.template(t)
            self.assertEqual(tg["replicas"], td["replicas"])
            self.assertEqual(tg["micro_batch"], td["micro_batch"])
            self.assertEqual(tg["depth"], len(td["stages"]))
            for s, sd in enumerate(td["stages"]):
                sg = tg["stages"][s]
                self.assertEqual(sg["gpu"], sd["gpu"])
                self.assertEqual([sg["first_layer"], sg["end_layer"]], sd["layers"])
                self.assertEqual(sg["tp"], sd["tp"])
                self.assertEqual(sg["stage_s"], sd["stage_s"])
                self.assertEqual(sg["memory_bytes"], sd["memory_bytes"])
        ranks = p.ranks()
        self.assertEqual([r["rank"] for r in ranks], list(range(p.num_ranks)))
        self.assertEqual(len({(r["node"], r["gpu"]) for r in ranks}), len(ranks))  # each GPU used once
        with self.assertRaises(arachne.Error) as e:
            p.template_get(p.num_templates, "depth")
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)
        with self.assertRaises(arachne.Error):
            p.rank_get(p.num_ranks, "node")

    def test_deterministic(self):
        need("arachne_search_random")
        again = arachne.search_random(self.cm, budget=40, seed=7)
        a, b = self.plan.to_dict(), again.to_dict()
        a["planner"].pop("planning_s", None)
        b["planner"].pop("planning_s", None)
        self.assertEqual(a, b)

    def test_files_and_reading_back(self):
        need("arachne_plan_save", "arachne_plan_load", "arachne_plan_from_json")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "plan.json")
            self.plan.save(path)
            self.assertEqual(json.loads(read(path)), self.plan.to_dict())
            back = self.cm.load_plan(path)
            self.assertIs(back.cost_model, self.cm)
            self.assertEqual(back.iteration_s, self.plan.iteration_s)
            self.assertEqual(back.to_dict()["templates"], self.plan.to_dict()["templates"])
        again = self.cm.plan_from_dict(self.plan.to_dict())
        self.assertEqual(again.iteration_s, self.plan.iteration_s)
        self.assertEqual(arachne.Plan.from_json(self.cm, self.plan.to_json()).gpus_used, self.plan.gpus_used)

    def test_open_file_alone(self):
        need("arachne_plan_file_header", "arachne_plan_save", "arachne_plan_load")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "plan.json")
            self.plan.save(path)
            h = arachne.Plan.read_header(path)
            self.assertEqual(h["model"], "llama3-8b")
            self.assertEqual(h["cluster"], SMALL_SPEC)
            self.assertEqual(h["global_batch"], 64)
            self.assertEqual(h["seq_len"], 4096)
            self.assertEqual(h["iteration_s"], self.plan.iteration_s)
            p = arachne.Plan.open(path)
            self.assertEqual(p.iteration_s, self.plan.iteration_s)
            self.assertEqual(p.cost_model.get("global_batch"), 64)
            self.assertEqual(arachne.Plan.open(path, global_batch=128).global_batch, 128)
            with open(path, "w") as f:
                f.write("[1, 2]")
            with self.assertRaises(arachne.Error) as e:
                arachne.Plan.read_header(path)
            self.assertEqual(e.exception.status, arachne.E_PARSE)

    def test_invalid_plans(self):
        need("arachne_plan_from_json")
        d = self.plan.to_dict()
        d["templates"][0]["stages"][0]["layers"] = [1, d["templates"][0]["stages"][0]["layers"][1]]
        with self.assertRaises(arachne.Error) as e:
            self.cm.plan_from_dict(d)
        self.assertEqual(e.exception.status, arachne.E_INVALID_PLAN)
        self.assertTrue(e.exception.message)
        d = self.plan.to_dict()
        d["bogus"] = 1
        with self.assertRaises(arachne.Error) as e:
            self.cm.plan_from_dict(d)
        self.assertEqual(e.exception.status, arachne.E_PARSE)
        with self.assertRaises(arachne.Error) as e:
            self.cm.load_plan("/nonexistent/plan.json")
        self.assertEqual(e.exception.status, arachne.E_IO)

    def test_export(self):
        need("arachne_plan_export")
        mbs = {t["micro_batch"] for t in self.plan.to_dict()["templates"]}
        cp = any("cp" in t for t in self.plan.to_dict()["templates"])
        for fmt in arachne.EXPORT_FORMATS:
            if fmt in ("sailor", "flashflex") and cp:
                # neither has a context-parallel setting: refused, not exported wrong
                with self.assertRaises(arachne.Error) as e:
                    self.plan.export(fmt)
                self.assertEqual(e.exception.status, arachne.E_UNSUPPORTED)
                continue
            if fmt == "sailor" and len(mbs) > 1:
                # a Sailor plan has one micro-batch size: refused, not exported wrong
                with self.assertRaises(arachne.Error) as e:
                    self.plan.export(fmt)
                self.assertEqual(e.exception.status, arachne.E_UNSUPPORTED)
                continue
            text = self.plan.export(fmt)
            self.assertTrue(text.strip(), fmt)
        lines = self.plan.export("ranks").strip().splitlines()
        self.assertEqual(len(lines), self.plan.gpus_used)
        self.assertEqual(json.loads(lines[0])["rank"], 0)
        with self.assertRaises(arachne.Error):
            self.plan.export("slurm")

    def test_svg(self):
        need("arachne_plan_to_svg", "arachne_plan_save_svg")
        svg = self.plan.to_svg()
        self.assertIn("<svg", svg)
        self.assertTrue(svg.rstrip().endswith("</svg>"))
        self.assertIn("H100", svg)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "plan.svg")
            self.plan.save_svg(path)
            self.assertEqual(read(path), svg)
            with self.assertRaises(arachne.Error) as e:
                self.plan.save_svg(os.path.join(tmp, "no", "such", "dir", "plan.svg"))
            self.assertEqual(e.exception.status, arachne.E_IO)

    def test_reprice(self):
        need("arachne_cost_model_price")
        cm2 = arachne.CostModel(self.cm.model, self.cm.cluster, self.cm.profile, global_batch=128)
        p = self.cm.plan_from_json(self.plan.to_json())
        before = p.iteration_s
        self.assertIs(cm2.price(p), p)
        self.assertEqual(p.global_batch, 128)
        self.assertEqual(p.to_dict()["global_batch"], 128)      # the JSON follows the new prices
        self.assertEqual(p.to_dict()["iteration_s"], p.iteration_s)
        self.assertGreater(p.iteration_s, before)
        self.assertEqual(self.plan.global_batch, 64)       # the other plan is untouched

    def test_threads_share_a_cost_model(self):
        need("arachne_search_random")
        import threading
        want = arachne.search_random(self.cm, budget=20, seed=11).to_dict()["templates"]
        got = {}

        def work(i):
            got[i] = arachne.search_random(self.cm, budget=20, seed=11).to_dict()["templates"]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(got), 4)
        for i in range(4):
            self.assertEqual(got[i], want)

    def test_close(self):
        p = make_plan(self.cm, seed=1)
        p.close()
        p.close()
        with self.assertRaises(arachne.Error):
            p.to_dict()
        with make_plan(self.cm, seed=1) as q:
            self.assertGreater(q.iteration_s, 0)
        self.assertTrue(q.closed)


class SearchTest(unittest.TestCase):
    def setUp(self):
        need(*(BASE + PLAN_FUNCS))

    def test_exhaustive_small(self):
        need("arachne_search_exhaustive", "arachne_search_random")
        cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse("h100:1x4"),
                               global_batch=16, max_depth=4)
        best = arachne.search_exhaustive(cm, max_templates=1)
        self.assertIn(best.method, ("exhaustive", "exhaustive-partial"))
        rnd = cm.search_random(budget=20, seed=3)
        self.assertGreaterEqual(best.iter_per_s, rnd.iter_per_s * (1 - 1e-12))

    def test_infeasible(self):
        need("arachne_search_random")
        cm = arachne.CostModel(arachne.Model.preset("qwen3-32b"), arachne.Cluster.parse("a5000:1x1"),
                               global_batch=8)
        with self.assertRaises(arachne.Error) as e:
            arachne.search_random(cm, budget=5, seed=1)
        self.assertEqual(e.exception.status, arachne.E_INFEASIBLE)
        self.assertTrue(e.exception.message)

    def test_bad_budget(self):
        need("arachne_search_random")
        cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse("h100:1x8"))
        with self.assertRaises(arachne.Error) as e:
            arachne.search_random(cm, budget=0)
        self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)


if __name__ == "__main__":
    unittest.main()
