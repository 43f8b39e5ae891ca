"""arachne.Model: presets, fields, per-layer numbers, JSON, errors, close."""
import os
import tempfile
import unittest

from support import LLAMA3_8B_PARAMS, REPO, arachne


class ModelTest(unittest.TestCase):
    def test_presets(self):
        names = arachne.Model.presets()
        for want in ("llama3-8b", "qwen3-8b", "qwen3-32b", "qwen3-64b", "qwen3-30b-a3b", "mixtral-8x7b",
                     "deepseek-v3"):
            self.assertIn(want, names)

    def test_llama3_8b(self):
        with arachne.Model.preset("llama3-8b") as m:
            self.assertEqual(m.name, "llama3-8b")
            self.assertEqual(m.total_params, LLAMA3_8B_PARAMS)
            self.assertEqual(m.active_params, LLAMA3_8B_PARAMS)
            self.assertEqual(m.blocks, 32)
            self.assertEqual(m.hidden, 4096)
            self.assertEqual(m.heads, 32)
            self.assertEqual(m.kv_heads, 8)
            self.assertEqual(m.head_dim, 128)
            self.assertEqual(m.ffn, 14336)
            self.assertEqual(m.vocab, 128256)
            self.assertEqual(m.experts, 0)
            self.assertEqual(m.get("total_params"), float(LLAMA3_8B_PARAMS))
            self.assertEqual(m.get(arachne.MODEL_FIELDS["hidden"]), 4096.0)
            f = m.fields()
            self.assertEqual(set(f), set(arachne.MODEL_FIELDS))
            # the parts add up to the total
            total = (m.layer_params("embed") + 32 * m.layer_params("dense") + m.layer_params("head"))
            self.assertEqual(total, LLAMA3_8B_PARAMS)
            self.assertEqual(m.layer_params(arachne.LAYER_MOE), 0)
            self.assertEqual(m.layer_flops("embed", 4096, 1), 0)
            fl = m.layer_flops("dense", 4096, 1)
            self.assertGreater(fl, 2 * m.layer_params("dense") * 4096)
            self.assertAlmostEqual(m.layer_flops("dense", 4096, 2), 2 * fl, delta=fl * 1e-12)
            full = m.layer_act_bytes("dense", 4096, 1, 1, "full")
            sel = m.layer_act_bytes("dense", 4096, 1, 1, "selective")
            none = m.layer_act_bytes("dense", 4096, 1, 1, arachne.RECOMPUTE_NONE)
            self.assertLess(full, sel)
            self.assertLess(sel, none)
            self.assertLess(m.layer_act_bytes("dense", 4096, 1, 4), sel)

    def test_moe_preset(self):
        with arachne.Model.open("Mixtral-8x7B") as m:
            self.assertEqual(m.experts, 8)
            self.assertEqual(m.top_k, 2)
            self.assertAlmostEqual(m.total_params / 1e9, 46.70, places=2)
            self.assertAlmostEqual(m.active_params / 1e9, 12.88, places=2)
            self.assertGreater(m.layer_params("moe"), 0)

    def test_json_round_trip(self):
        with arachne.Model.preset("qwen3-30b-a3b") as m:
            text = m.to_json()
            d = m.to_dict()
            self.assertEqual(d["format"], "arachne-model")
            m2 = arachne.Model.from_json(text)
            self.assertEqual(m2.fields(), m.fields())
            self.assertEqual(arachne.Model.from_dict(d).total_params, m.total_params)
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "m.json")
                m.save(path)
                self.assertEqual(arachne.Model.load(path).to_json(), text)
                self.assertEqual(arachne.Model.open(path).active_params, m.active_params)

    def test_example_model_files(self):
        d = os.path.join(REPO, "examples", "models")
        files = [f for f in sorted(os.listdir(d)) if f.endswith(".json")] if os.path.isdir(d) else []
        if not files:
            self.skipTest("no example model files")
        for f in files:
            with arachne.Model.load(os.path.join(d, f)) as m:
                self.assertGreater(m.total_params, 0)

    def test_errors(self):
        with self.assertRaises(arachne.Error) as cm:
            arachne.Model.preset("gpt-7")
        self.assertEqual(cm.exception.status, arachne.E_NOT_FOUND)
        self.assertIn("gpt-7", cm.exception.message)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Model.open("/nonexistent/model.json")
        self.assertLess(cm.exception.status, 0)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Model.from_json('{"format": "arachne-model", "version": 1, "bogus": 1}')
        self.assertIn(cm.exception.status, (arachne.E_PARSE, arachne.E_INVALID_ARGUMENT))
        self.assertTrue(cm.exception.message)
        m = arachne.Model.preset("llama3-8b")
        with self.assertRaises(arachne.Error) as cm:
            m.layer_flops("dense", 0, 1)
        self.assertEqual(cm.exception.status, arachne.E_INVALID_ARGUMENT)
        with self.assertRaises(arachne.Error):
            m.layer_params("sliding_window")
        with self.assertRaises(arachne.Error):
            m.layer_act_bytes("dense", 4096, 1, 1, "sometimes")

    def test_hybrid_model_file(self):
        path = os.path.join(REPO, "examples", "models", "nemotron3-nano-30b-a3b.json")
        with arachne.Model.open(path) as m:
            self.assertEqual(m.blocks, 52)
            self.assertEqual(m.total_params, 31577937344)
            fields = m.fields()
            self.assertEqual((fields["mamba_layers"], fields["attention_layers"], fields["moe_mlp_layers"]),
                             (23, 6, 23))
            self.assertEqual(fields["dense_blocks"] + fields["moe_blocks"], 0)
            self.assertEqual(m.layer_params("mamba"), 38744896.0)
            self.assertEqual(m.layer_params(arachne.LAYER_MOE_MLP), m.layer_params("moe_mlp"))
            self.assertEqual(m.layer_params("dense"), 0.0)
            self.assertGreater(m.layer_flops("attention", 4096, 1), 0)

    def test_close(self):
        m = arachne.Model.preset("llama3-8b")
        m.close()
        m.close()
        with self.assertRaises(arachne.Error):
            m.total_params
        with arachne.Model.preset("qwen3-8b") as m2:
            self.assertEqual(m2.blocks, 36)
        self.assertTrue(m2.closed)


if __name__ == "__main__":
    unittest.main()
