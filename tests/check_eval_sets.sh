#!/bin/sh
# The held-out sets: examples/eval/small.json holds the three small
# compositions of heldout.json plus the nine make_small.py draws (seed 6),
# and no held-out composition is a training composition of either
# training config, in any order of its GPU types.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
drawn=$(python3 examples/eval/make_small.py "$bin" 9 6) || fail "make_small.py: exit $?"
printf '%s\n' "$drawn" | python3 -B -c '
import json, sys
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
' || fail "held-out sets"
exit 0
