#!/bin/sh
# check_plan_threads.sh -- best-of-K planning and rollout decoding give the
# same plan bytes with 1, 2 and 3 OpenMP threads, and the same bytes as the
# build without OpenMP.  src/policy_build.c (the parallel rollouts) and
# src/policy_rollout.c (the parallel completions) are compiled with -fopenmp into a
# temporary directory and linked ahead of the static library of the current
# build (exit 77 = skip when the compiler has no OpenMP, or for sanitizer
# builds).
set -u
BIN=${ARACHNE_BIN:-bin/arachne}
. tests/omp_cli.sh
omp_cli src/policy_build.c src/policy_rollout.c src/refine_ahead.c
# the plan JSON without its wall-clock field
strip_time() { sed 's/"planning_s": *[^,]*,//'; }
ARACHNE_POLICY=${ARACHNE_POLICY:-examples/policies/default.arpol}; export ARACHNE_POLICY
n=0
# same_threads NAME ARGS...: ARGS planned by the serial build and by the
# OpenMP one with 1, 2 and 3 threads give the same plan bytes
same_threads() {
    name=$1
    shift
    "$BIN" plan "$@" --json | strip_time > "$tmp/$name.json" || { echo "plan failed: $name $*"; exit 1; }
    for t in 1 2 3; do
        OMP_NUM_THREADS=$t "$tmp/arachne" plan "$@" --json | strip_time > "$tmp/$name$t.json" ||
            { echo "OpenMP plan failed: $name $*, $t threads"; exit 1; }
        cmp -s "$tmp/$name.json" "$tmp/$name$t.json" || { echo "$name $*: $t threads differ from the serial build"; \
            diff "$tmp/$name.json" "$tmp/$name$t.json" | head -20; exit 1; }
        n=$((n + 1))
    done
}
for spec in "llama3-8b a100-40:32x4,a6000:32x4,h100:64x4" "qwen3-30b-a3b a100-80:4x8,h100:2x8,a6000:4x4"; do
    set -- $spec
    same_threads best --model "$1" --cluster "$2" --samples 16 --seed 7
    grep -q '"method": "policy-best-of-k' "$tmp/best.json" || { echo "$spec: not a best-of-k plan"; exit 1; }
    same_threads ro --model "$1" --cluster "$2" --rollout --refine 0
    grep -q '"method": "policy-rollout' "$tmp/ro.json" || { echo "$spec: not a rollout plan"; exit 1; }
done
# a refinement whose climbs improve on best-of-16 (6.71 -> 8.15 iter/s):
# the threads fill its candidates ahead
mix16k=h100:512x8,a100-80:512x8,a100-40:512x4,l40s:256x8,a6000:256x4,rtx-pro-6000:256x4,a5000:256x4,v100-16:256x4
same_threads climb --model llama3-8b --samples 16 --cluster $mix16k
# ... and the climbs did move: the refined plan is faster than best-of-16's
ips() { sed -n 's/^ *"iter_per_s": *\([0-9.eE+-]*\),*$/\1/p' "$1" | head -1; }
"$BIN" plan --model llama3-8b --samples 16 --cluster $mix16k --refine 0 --json | strip_time > "$tmp/start.json" ||
    { echo "plan failed: climb --refine 0"; exit 1; }
awk -v a="$(ips "$tmp/climb.json")" -v b="$(ips "$tmp/start.json")" 'BEGIN { exit !(a + 0 > 1.02 * b && b + 0 > 0) }' ||
    { echo "climb: refined $(ips "$tmp/climb.json") iter/s, best-of-16 $(ips "$tmp/start.json"): the climbs did not improve"; exit 1; }
# the refinement's third start (the best rollout on other GPU types) wins:
# 0.1600 iter/s where the best sample and the greedy plan, GB300 alone,
# refine to 0.1527; the rollout it starts from is the same for any thread
# count
same_threads alt --model llama3-8b --cluster a100-40:140x1,gb300:2x72 --global-batch 4096 --seed 1 --max-vp 8
grep -q '"gpu": "A100-40"' "$tmp/alt.json" || { echo "alt: the plan uses no A100-40"; exit 1; }
# a first-step depth mask whose searches run out of the small budget and
# are searched again (the threads search its depths between them)
same_threads esc --model mixtral-8x7b --cluster h100:1x8,gh-96:4x1,l4:2x1 --global-batch 256 --samples 16
echo "best-of-16 + refinement and rollout plans identical with 1, 2 and 3 threads and without OpenMP ($n runs)"
