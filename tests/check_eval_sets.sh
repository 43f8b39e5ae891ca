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
exit 0
