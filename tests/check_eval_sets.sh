#!/bin/sh
# The held-out sets: examples/eval/small.json holds the three small
# compositions of heldout.json plus the nine make_small.py draws (seed 6);
# the validation set examples/eval/validation.json (choosing between
# training runs) is the twelve it draws with seed 8.  No held-out or
# validation composition is a training composition of either training
# config, and the validation set shares none with the held-out sets, in
# any order of the GPU types.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
val_draw=$(mktemp) || fail "mktemp"
trap 'rm -f "$val_draw"' EXIT
drawn=$(python3 examples/eval/make_small.py "$bin" 9 6) || fail "make_small.py: exit $?"
python3 examples/eval/make_small.py "$bin" 12 8 > "$val_draw" || fail "make_small.py seed 8: exit $?"
printf '%s\n' "$drawn" | VAL="$val_draw" python3 -B -c '
import json, os, sys
sys.path.insert(0, "examples/eval")
from make_small import TRAINING, key, keys_of
drawn = json.load(sys.stdin)
small = json.load(open("examples/eval/small.json"))["compositions"]
held = json.load(open("examples/eval/heldout.json"))["compositions"]
three = [c for c in held if c["name"].startswith("small-")]
assert len(three) == 3 and small[:3] == three, "small.json must start with the three small held-out compositions"
assert small[3:] == drawn, "small.json differs from make_small.py seed 6:\n%s" % json.dumps(drawn)
seen = keys_of(TRAINING)
for c in held + small:
    assert key(c["model"], c["cluster"]) not in seen, "held-out composition %s is a training composition" % c["name"]
assert len({c["name"] for c in small}) == len(small), "duplicate names in small.json"
val = json.load(open("examples/eval/validation.json"))["compositions"]
strip = lambda cs: [{k: v for k, v in c.items() if k != "name"} for c in cs]
assert strip(val) == strip(json.load(open(os.environ["VAL"]))), "validation.json differs from make_small.py 12 8"
assert all(c["name"].startswith("val-") for c in val), "validation names start with val-"
held_keys = {key(c["model"], c["cluster"]) for c in held + small}
for c in val:
    k = key(c["model"], c["cluster"])
    assert k not in seen and k not in held_keys, "validation composition %s is a training or held-out one" % c["name"]
' || fail "held-out sets"
# examples/eval/validation-200.json (choosing between training runs since
# session 11): the last 200 of make_small.py 400 20.  Redrawing 400 takes
# too long for a test; check the drawing rule and that it shares no
# composition with training, held-out or the other validation set.
python3 -B -c '
import json, sys
sys.path.insert(0, "examples/eval")
from make_small import MODELS, TYPES, SIZES, TRAINING, key, keys_of
big = json.load(open("examples/eval/validation-200.json"))["compositions"]
assert len(big) == 200, len(big)
assert len({c["name"] for c in big}) == 200 and all(c["name"].startswith("gen-") for c in big), "names"
others = keys_of(TRAINING + ("examples/eval/heldout.json", "examples/eval/small.json", "examples/eval/validation.json"))
keys = set()
for c in big:
    k = key(c["model"], c["cluster"])
    assert k not in others, "%s is a training, held-out or validation composition" % c["name"]
    assert k not in keys, "%s twice" % c["name"]
    keys.add(k)
    assert c["model"] in MODELS and c["global_batch"] == 256, c["name"]
    parts = c["cluster"].split(",")
    assert len(parts) in (2, 3) and len({p.split(":")[0] for p in parts}) == len(parts), c["name"]
    total = 0
    for p in parts:
        t, groups = p.split(":")
        assert t in TYPES, c["name"]
        n = 0
        for g in groups.split("+"):
            a, s = map(int, g.split("x"))
            assert s in SIZES and 1 <= a <= 8 // s, c["name"]
            n += a * s
        assert 4 <= n <= 16, c["name"]
        total += n
    assert 16 <= total <= 40, c["name"]
' || fail "validation-200.json"
# The broad sets (make_sets.py): each file's compositions are the draw of
# its rule and seed; the properties the rule promises hold; held-out and
# validation sets share nothing with each other, with training or with the
# earlier sets.
python3 -B -c '
import json, subprocess, sys
sys.path.insert(0, "examples/eval")
from make_sets import EARLIER, NEW, NEW_SMALL, DENSE, MOE, MOE_SMALL, RACK, SIZES, key, keys_of
# each draw excludes the sets drawn before it: the first n of `order`
order = ["broad-small", "broad-large", "broad-val-small", "broad-val-large", "broad2-small", "broad2-large",
         "broad3-large", "broad-val2-large", "broad4-large"]
prior = lambda n: ["examples/eval/%s.json" % s for s in order[:n]]
sets = {
    "broad-small": ["small", "16", "101"],
    "broad-large": ["large", "10", "202"],
    "broad-val-small": ["small", "100", "303", "val-"] + prior(2),
    "broad-val-large": ["large", "20", "404", "val-"] + prior(2),
    # the second held-out draw (2026-12-07)
    "broad2-small": ["small", "48", "505", "held2-"] + prior(4),
    "broad2-large": ["large", "24", "606", "held2-"] + prior(4),
    # the third held-out draw (2026-12-07, large only)
    "broad3-large": ["large", "24", "707", "held3-"] + prior(6),
    # a second validation draw of large clusters (2026-12-08)
    "broad-val2-large": ["large", "48", "808", "val2-"] + prior(7),
    # the fourth held-out draw (2026-12-08, large only)
    "broad4-large": ["large", "48", "909", "held4-"] + prior(8),
}
earlier = keys_of(EARLIER)
allkeys = {}
for name, args in sets.items():
    comps = json.load(open("examples/eval/%s.json" % name))["compositions"]
    drawn = json.loads(subprocess.check_output([sys.executable, "-B", "examples/eval/make_sets.py"] + args))
    assert comps == drawn, "%s.json differs from make_sets.py %s" % (name, " ".join(args))
    small = args[0] == "small"
    lo, hi, tlo, thi = (16, 40, 2, 4) if small else (256, 16384, 2, 8)
    new_types = NEW_SMALL if small else NEW
    for i, c in enumerate(comps):
        k = key(c["model"], c["cluster"])
        assert k not in earlier, "%s: %s is a training or earlier evaluation composition" % (name, c["name"])
        assert k not in allkeys, "%s: %s is also in %s" % (name, c["name"], allkeys.get(k))
        allkeys[k] = name
        assert c["model"] in ((MOE_SMALL if small else MOE) if i % 2 else DENSE), (name, c["name"])
        parts = [p.split(":") for p in c["cluster"].split(",")]
        types = [t for t, _ in parts]
        assert tlo <= len(types) <= thi and len(set(types)) == len(types), (name, c["name"])
        assert new_types[i % len(new_types)] in types, (name, c["name"])
        gpus = 0
        for t, groups in parts:
            for g in groups.split("+"):
                n, s = map(int, g.split("x"))
                assert s == RACK[t] if t in RACK else s in SIZES, (name, c["name"], t, s)
                gpus += n * s
        assert lo <= gpus <= hi, (name, c["name"], gpus)
    shapes = {int(g.split("x")[1]) for c in comps for p in c["cluster"].split(",") for g in p.split(":")[1].split("+")}
    assert shapes >= ({1, 2, 4, 8} if small else {1, 2, 4, 8, 72}), (name, shapes)
    assert set(new_types) <= {p.split(":")[0] for c in comps for p in c["cluster"].split(",")}, name
' || fail "broad sets"
# The training compositions of the bundled policy (examples/train/
# make_train_set.py): examples/train/default.json holds the draw of its rule
# and seed, the properties the rule promises hold, and no composition is in
# an evaluation or validation set.
python3 -B -c '
import glob, json, subprocess, sys
sys.path.insert(0, "examples/train")
from make_train_set import DENSE, MOE, NEW, RACK, SIZES, LO, HI, COUNT, SEED, key
cfg = json.load(open("examples/train/default.json"))
comps = cfg["compositions"]
n, seed = COUNT, SEED
drawn = json.loads(subprocess.check_output([sys.executable, "-B", "examples/train/make_train_set.py", str(n), str(seed)]))
assert comps == drawn["compositions"], "default.json differs from make_train_set.py %d %d" % (n, seed)
evals = {}
for p in sorted(glob.glob("examples/eval/*.json")):
    for c in json.load(open(p))["compositions"]:
        evals[key(c["model"], c["cluster"])] = p
keys, types_seen, shapes, dense = set(), set(), set(), 0
for i, c in enumerate(comps):
    k = key(c["model"], c["cluster"])
    assert k not in evals, "training composition %s is in %s" % (c["name"], evals.get(k))
    assert k not in keys, "%s twice" % c["name"]
    keys.add(k)
    assert c["model"] in (MOE if i % 2 else DENSE), c["name"]
    dense += i % 2 == 0
    parts = [p.split(":") for p in c["cluster"].split(",")]
    types = [t for t, _ in parts]
    assert 2 <= len(types) <= 8 and len(set(types)) == len(types), c["name"]
    gpus = 0
    for t, groups in parts:
        for g in groups.split("+"):
            a, s = map(int, g.split("x"))
            assert s == RACK[t] if t in RACK else s in SIZES, (c["name"], t, s)
            shapes.add(s)
            gpus += a * s
    assert LO <= gpus <= HI, (c["name"], gpus)
    assert 256 <= c["setup"]["global_batch"] <= 8192, c["name"]
    types_seen |= set(types)
assert dense * 2 == len(comps), "dense and MoE alternate"
assert set(NEW) <= types_seen, "every new part is trained on"
assert shapes >= {1, 2, 4, 8, 72}, shapes
' || fail "training compositions"
# The same draw as eval configs (make_train_set.py --eval, bench_distill's
# input): chunks of 256 in draw order, the compositions of the plain draw.
tmpd=$(mktemp -d) || fail "mktemp"
python3 -B examples/train/make_train_set.py --eval 300 7 "$tmpd/d" || fail "make_train_set.py --eval"
python3 -B -c '
import json, subprocess, sys
d = sys.argv[1]
drawn = json.loads(subprocess.check_output([sys.executable, "-B", "examples/train/make_train_set.py", "300", "7"]))["compositions"]
chunks = [json.load(open("%s/d-%d.json" % (d, k))) for k in (0, 1)]
assert [len(c["compositions"]) for c in chunks] == [256, 44], "chunk sizes"
got = [c for ch in chunks for c in ch["compositions"]]
assert all(ch["format"] == "arachne-eval" for ch in chunks)
assert [(c["name"], c["model"], c["cluster"], c["global_batch"]) for c in got] == \
    [(c["name"], c["model"], c["cluster"], c["setup"]["global_batch"]) for c in drawn], "eval chunks differ from the draw"
' "$tmpd" || { rm -rf "$tmpd"; fail "make_train_set.py --eval chunks"; }
# make_sets.py --eval: the broad rule's draw cut the same way, numbered
# names (the rule's own outgrow 63 bytes on long draws); no file but the
# chunks is written.
python3 -B examples/eval/make_sets.py --eval small 300 7 "$tmpd/s" examples/eval/broad-small.json ||
    { rm -rf "$tmpd"; fail "make_sets.py --eval"; }
python3 -B -c '
import json, os, subprocess, sys
d = sys.argv[1]
drawn = json.loads(subprocess.check_output([sys.executable, "-B", "examples/eval/make_sets.py", "small", "300", "7", "",
                                            "examples/eval/broad-small.json"]))
chunks = [json.load(open("%s/s-%d.json" % (d, k))) for k in (0, 1)]
assert [len(c["compositions"]) for c in chunks] == [256, 44], "chunk sizes"
assert not os.path.exists("%s/s-2.json" % d), "a third chunk"
got = [c for ch in chunks for c in ch["compositions"]]
assert all(ch["format"] == "arachne-eval" for ch in chunks)
strip = lambda cs: [(c["model"], c["cluster"], c["global_batch"]) for c in cs]
assert strip(got) == strip(drawn), "eval chunks differ from the draw"
assert [c["name"] for c in got] == ["s-%d-%s" % (i, c["model"]) for i, c in enumerate(got)], "numbered names"
' "$tmpd" || { rm -rf "$tmpd"; fail "make_sets.py --eval chunks"; }
python3 -B examples/eval/make_sets.py --eval small 3 2>/dev/null && { rm -rf "$tmpd"; fail "make_sets.py --eval without a prefix"; }
rm -rf "$tmpd"
exit 0
