"""arachne.Profile: table edits, exact lookup, JSON, files, the generator,
the Sailor importer, errors."""
import os
import tempfile
import unittest

from support import SMALL_SPEC, arachne, need, sailor_dir


class ProfileTableTest(unittest.TestCase):
    def setUp(self):
        need("arachne_profile_create", "arachne_profile_add", "arachne_profile_lookup")

    def test_create_add_lookup(self):
        with arachne.Profile("llama3-8b", 2048) as p:
            self.assertEqual(len(p), 0)
            self.assertEqual(p.model_name, "llama3-8b")
            self.assertEqual(p.seq_len, 2048)
            self.assertIs(p.add("h100", "dense", 2, 4, 0.01, 0.02, 0.001, 1e9), p)
            p.add("A100-40", arachne.LAYER_EMBED, 1, 1, 1e-4, 2e-4)
            self.assertEqual(len(p), 2)
            e = p.lookup("H100", "dense", 2, 4)
            self.assertEqual((e.fwd_s, e.bwd_s, e.tp_comm_s, e.act_bytes), (0.01, 0.02, 0.001, 1e9))
            self.assertEqual(e.kind, arachne.LAYER_DENSE)
            self.assertEqual(e._asdict()["mbs"], 4)
            # same key replaces
            p.add("h100", "dense", 2, 4, 0.5, 0.6, 0.0, 2e9)
            self.assertEqual(len(p), 2)
            self.assertEqual(p.lookup("h100", 1, 2, 4).fwd_s, 0.5)
            entries = p.entries()
            self.assertEqual([x.gpu for x in entries], sorted(x.gpu for x in entries))
            self.assertEqual(p.entry(0), entries[0])
            self.assertEqual(list(p), entries)

    def test_lookup_is_exact(self):
        p = arachne.Profile("llama3-8b", 4096)
        p.add("h100", "dense", 2, 4, 0.01, 0.02, 0.0, 0.0)
        for key in (("h100", "dense", 2, 8), ("h100", "dense", 4, 4), ("h100", "moe", 2, 4),
                    ("a100-40", "dense", 2, 4)):
            with self.assertRaises(arachne.Error) as cm:
                p.lookup(*key)
            self.assertEqual(cm.exception.status, arachne.E_NOT_FOUND)
            self.assertTrue(cm.exception.message)

    def test_bad_entries(self):
        p = arachne.Profile("llama3-8b", 4096)
        for args in (("h100", "dense", 3, 1, 0.1, 0.1),      # tp not a power of two
                     ("h100", "dense", 1, 0, 0.1, 0.1),      # mbs 0
                     ("h100", "dense", 1, 1, -0.1, 0.1),     # negative time
                     ("h100", 9, 1, 1, 0.1, 0.1),            # unknown kind
                     ("", "dense", 1, 1, 0.1, 0.1)):         # empty GPU name
            with self.assertRaises(arachne.Error) as cm:
                p.add(*args)
            self.assertEqual(cm.exception.status, arachne.E_INVALID_ARGUMENT, args)
        self.assertEqual(len(p), 0)
        with self.assertRaises(arachne.Error):
            arachne.Profile("llama3-8b", 0)

    def test_json_and_files(self):
        need("arachne_profile_to_json", "arachne_profile_from_json", "arachne_profile_save", "arachne_profile_load")
        p = arachne.Profile("llama3-8b", 4096)
        p.add("h100", "dense", 2, 4, 0.1, 0.2 / 3, 0.001, 123456789.0)
        p.add("a6000", "head", 1, 1, 1e-3, 2e-3, 0.0, 1.0)
        text = p.to_json()
        d = p.to_dict()
        self.assertEqual(d["format"], "arachne-profile")
        q = arachne.Profile.from_json(text)
        self.assertEqual(q.entries(), p.entries())
        self.assertEqual(q.to_json(), text)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.json")
            p.save(path)
            self.assertEqual(arachne.Profile.load(path).to_json(), text)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Profile.from_json(text.replace('"arachne-profile"', '"arachne-profile", "extra": 1', 1))
        self.assertEqual(cm.exception.status, arachne.E_PARSE)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Profile.load("/nonexistent/p.json")
        self.assertEqual(cm.exception.status, arachne.E_IO)


class ProfileGenerateTest(unittest.TestCase):
    def setUp(self):
        need("arachne_profile_generate")

    def test_generate(self):
        m = arachne.Model.preset("llama3-8b")
        c = arachne.Cluster.parse(SMALL_SPEC)
        p = arachne.Profile.generate(m, c, seq_len=4096)
        self.assertEqual(p.model_name, "llama3-8b")
        self.assertEqual(p.seq_len, 4096)
        self.assertGreater(len(p), 0)
        h = p.lookup("h100", "dense", 1, 1)
        a = p.lookup("a100-40", "dense", 1, 1)
        self.assertGreater(h.fwd_s, 0)
        self.assertGreater(h.bwd_s, h.fwd_s)
        self.assertLess(h.fwd_s, a.fwd_s)                   # H100 is faster
        self.assertEqual(h.tp_comm_s, 0)
        self.assertGreater(p.lookup("h100", "dense", 8, 1).tp_comm_s, 0)
        with self.assertRaises(arachne.Error):              # A100 nodes have 4 GPUs
            p.lookup("a100-40", "dense", 8, 1)
        self.assertEqual({e.gpu for e in p}, {"A100-40", "H100"})
        # deterministic
        self.assertEqual(arachne.Profile.generate(m, c, seq_len=4096).to_json(), p.to_json())

    def test_generate_gpu(self):
        need("arachne_profile_generate_gpu")
        m = arachne.Model.preset("llama3-8b")
        c = arachne.Cluster.parse(SMALL_SPEC)
        p = arachne.Profile("llama3-8b", 4096)
        p.generate_gpu(m, c, "h100")
        self.assertEqual({e.gpu for e in p}, {"H100"})
        with self.assertRaises(arachne.Error) as cm:
            p.generate_gpu(m, c, "a6000")
        self.assertEqual(cm.exception.status, arachne.E_NOT_FOUND)

    def test_import_sailor(self):
        need("arachne_profile_import_sailor")
        d = sailor_dir()
        if d is None:
            self.skipTest("measured Sailor profiles not found")
        p = arachne.Profile.import_sailor(d, "OPT-350")
        self.assertEqual(p.model_name, "OPT-350")
        self.assertGreater(len(p), 0)
        for e in p.entries()[:20]:
            self.assertGreaterEqual(e.fwd_s, 0)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Profile.import_sailor(d, "no-such-model")
        self.assertEqual(cm.exception.status, arachne.E_NOT_FOUND)


if __name__ == "__main__":
    unittest.main()
