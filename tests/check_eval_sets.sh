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
exit 0
