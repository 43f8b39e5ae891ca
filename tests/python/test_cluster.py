"""arachne.Cluster: parsing, building, getters, JSON round trip, errors, lifetime."""
import json
import os
import tempfile
import unittest

from support import BIG_SPEC, arachne, read


class ClusterTest(unittest.TestCase):
    def test_parse_counts(self):
        with arachne.Cluster.parse(BIG_SPEC) as c:
            self.assertEqual(c.gpu_count(), 128 + 48 + 128)
            self.assertEqual(c.gpu_count("a100-40"), 128)
            self.assertEqual(c.gpu_count("A6000"), 48)
            self.assertEqual(c.gpu_count("h100"), 128)
            self.assertEqual(c.gpu_count("a100-80"), 0)  # catalog type absent from the cluster
            self.assertEqual(c.node_count(), 32 + 24 + 16)
            self.assertEqual(c.node_count("a6000"), 24)
            self.assertEqual(c.largest_node(), 8)
            self.assertEqual(c.largest_node("a6000"), 4)
            self.assertEqual(c.type_count, 3)
            self.assertEqual(c.types, ["A100-40", "A6000", "H100"])
            self.assertEqual(c.type_name(1), "A6000")
            self.assertEqual(c.node(0), ("A100-40", 4))
            self.assertEqual(c.node(32 + 8), ("A6000", 1))
            self.assertEqual(len(c.nodes), 72)
            self.assertEqual(str(c), BIG_SPEC)
            self.assertEqual(c.to_string(), BIG_SPEC)

    def test_build_by_hand(self):
        c = arachne.Cluster()
        self.assertEqual(c.gpu_count(), 0)
        self.assertEqual(c.to_string(), "")
        self.assertIs(c.add_nodes("h100", 2, 8), c)
        c.add_nodes("a100-40", 1, 4)
        self.assertEqual(c.gpu_count(), 20)
        self.assertEqual(c.to_string(), "h100:2x8,a100-40:1x4")
        c.close()

    def test_custom_type_and_links(self):
        c = arachne.Cluster()
        c.add_gpu_type("mygpu", 24e9, 100e12, 1e12, 100e9, 12.5e9)
        c.add_nodes("mygpu", 2, 4).add_nodes("h100", 1, 8)
        self.assertEqual(c.gpu_get("mygpu", "memory_bytes"), 24e9)
        self.assertEqual(c.gpu_info("mygpu")["flops"], 100e12)
        # default cross-type link: the slower side
        self.assertEqual(c.link_bandwidth("mygpu", "h100"),
                         min(12.5e9, c.gpu_get("h100", "inter_bytes_per_s")))
        c.set_link_bandwidth("mygpu", "h100", 5e9)
        self.assertEqual(c.link_bandwidth("h100", "mygpu"), 5e9)
        c.set_gpu_field("mygpu", "intra_latency_s", 7e-6)
        self.assertEqual(c.gpu_get("mygpu", arachne.GPU_FIELDS["intra_latency_s"]), 7e-6)

    def test_json_round_trip_and_files(self):
        with arachne.Cluster.parse("a100-40:2x4,a6000:1x4+2x1") as c:
            text = c.to_json()
            d = c.to_dict()
            self.assertEqual(d["format"], "arachne-cluster")
            self.assertEqual(d["version"], 1)
            c2 = arachne.Cluster.from_json(text)
            self.assertEqual(c2.to_json(), text)
            self.assertEqual(arachne.Cluster.from_dict(d).to_string(), c.to_string())
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "c.json")
                c.save(path)
                self.assertEqual(arachne.Cluster.load(path).to_json(), text)
                self.assertEqual(arachne.Cluster.open(path).to_string(), c.to_string())
                self.assertEqual(json.loads(read(path)), d)
            self.assertEqual(arachne.Cluster.open("h100:1x8").gpu_count(), 8)

    def test_errors(self):
        with self.assertRaises(arachne.Error) as cm:
            arachne.Cluster.parse("a100-40:2x4,h100:1y8")
        self.assertEqual(cm.exception.status, arachne.E_PARSE)
        self.assertIn("offset", cm.exception.message)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Cluster.parse("h1000:1x8")
        self.assertEqual(cm.exception.status, arachne.E_NOT_FOUND)
        self.assertIn("h1000", cm.exception.message)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Cluster.from_json('{"format": "arachne-cluster"')
        self.assertEqual(cm.exception.status, arachne.E_PARSE)
        with self.assertRaises(arachne.Error) as cm:
            arachne.Cluster.load("/nonexistent/cluster.json")
        self.assertEqual(cm.exception.status, arachne.E_IO)
        c = arachne.Cluster.parse("h100:1x8")
        with self.assertRaises(arachne.Error) as cm:
            c.add_nodes("h100", 1, 2000)
        self.assertEqual(cm.exception.status, arachne.E_INVALID_ARGUMENT)
        with self.assertRaises(arachne.Error) as cm:
            c.node(5)
        self.assertEqual(cm.exception.status, arachne.E_INVALID_ARGUMENT)
        self.assertEqual(c.gpu_count(), 8)  # unchanged by the failed call

    def test_close(self):
        c = arachne.Cluster.parse("h100:1x8")
        self.assertFalse(c.closed)
        c.close()
        c.close()  # idempotent
        self.assertTrue(c.closed)
        with self.assertRaises(arachne.Error) as cm:
            c.gpu_count()
        self.assertEqual(cm.exception.status, arachne.E_INVALID_ARGUMENT)
        self.assertIn("closed", cm.exception.message)
        with arachne.Cluster.parse("h100:1x8") as c2:
            pass
        self.assertTrue(c2.closed)


if __name__ == "__main__":
    unittest.main()
