#!/bin/sh
# check_plan_threads.sh -- best-of-K planning gives the same plan bytes with
# 1, 2 and 3 OpenMP threads, and the same bytes as the build without OpenMP.
# src/policy_build.c (the parallel rollouts) is compiled with -fopenmp into a
# temporary directory and linked ahead of the static library of the current
# build (exit 77 = skip when the compiler has no OpenMP, or for sanitizer
# builds).
set -u
BIN=${ARACHNE_BIN:-bin/arachne}
. tests/omp_cli.sh
omp_cli src/policy_build.c
# the plan JSON without its wall-clock field
strip_time() { sed 's/"planning_s": *[^,]*,//'; }
ARACHNE_POLICY=${ARACHNE_POLICY:-examples/policies/default.arpol}; export ARACHNE_POLICY
n=0
for spec in "llama3-8b a100-40:32x4,a6000:32x4,h100:64x4" "qwen3-30b-a3b a100-80:4x8,h100:2x8,a6000:4x4"; do
    set -- $spec
    "$BIN" plan --model "$1" --cluster "$2" --samples 16 --seed 7 --json | strip_time > "$tmp/ref.json" ||
        { echo "plan failed: $spec"; exit 1; }
    for t in 1 2 3; do
        OMP_NUM_THREADS=$t "$tmp/arachne" plan --model "$1" --cluster "$2" --samples 16 --seed 7 --json \
            | strip_time > "$tmp/t$t.json" || { echo "OpenMP plan failed: $spec, $t threads"; exit 1; }
        cmp -s "$tmp/ref.json" "$tmp/t$t.json" || { echo "$spec: $t threads differ from the serial build"; \
            diff "$tmp/ref.json" "$tmp/t$t.json" | head -20; exit 1; }
        n=$((n + 1))
    done
    grep -q '"method": "policy-best-of-k' "$tmp/ref.json" || { echo "$spec: not a best-of-k plan"; exit 1; }
done
echo "best-of-16 + refinement plans identical with 1, 2 and 3 threads and without OpenMP ($n runs)"
