#!/bin/sh
# check_determinism.sh -- training gives the same policy bytes with 1 and 2
# OpenMP threads, and twice in a row.  The config covers a 1,616-GPU MoE
# composition with NVL72 racks that the size curriculum (SIZE_CURRICULUM)
# lets in at update 1, refinement rounds (REFINE_INTERVAL) whose refined
# plans must enter the buffers, rollout targets (ROLLOUT_INTERVAL) planned
# in parallel over the compositions, two imitation steps per update
# (SIL_EPOCHS), and model selection after every update.  Only src/train.c and src/train_ppo.c use OpenMP, so they
# are compiled with -fopenmp into a temporary directory and linked with the
# CLI objects and the static library of the current build (exit 77 = skip
# when the compiler has no OpenMP, or for sanitizer builds).
set -u
. tests/omp_cli.sh
omp_cli src/train.c src/train_ppo.c
cat > "$tmp/cfg.json" <<JSON
{
  "name": "determinism", "seed": 3, "updates": 3, "log_every": 1,
  "policy": { "hidden": 32, "layers": 1, "init_seed": 2 },
  "hyper": { "group_size": 4, "ppo_epochs": 2, "sil_interval": 2, "size_curriculum": 2,
             "refine_interval": 2, "refine_evaluations": 40, "rollout_interval": 2, "rollout_evaluations": 200,
             "sil_epochs": 2 },
  "compositions": [
    { "model": "llama3-8b", "clusters": ["a100-40:2x4,h100:1x8", "a6000:4x2,h100:1x8"] },
    { "model": "qwen3-8b", "cluster": "a6000:2x4,h100:1x8", "setup": { "global_batch": 256 } },
    { "model": "qwen3-30b-a3b", "cluster": "gb200:18x72,h100:40x8", "setup": { "global_batch": 2048 } }
  ],
  "output": { "policy": "OUT.arpol", "csv": "OUT.csv", "select_every": 1 }
}
JSON
for n in 1 2; do
    sed "s|OUT|$tmp/p$n|g" "$tmp/cfg.json" > "$tmp/cfg$n.json"
    OMP_NUM_THREADS=$n "$tmp/arachne" train --config "$tmp/cfg$n.json" 2> "$tmp/log$n" || { cat "$tmp/log$n"; exit 1; }
done
grep -q "refined [1-9]" "$tmp/log1" || { cat "$tmp/log1"; echo "no refined plan entered the buffers"; exit 1; }
if ! cmp "$tmp/p1.arpol" "$tmp/p2.arpol"; then
    echo "policies trained with 1 and 2 threads differ"; exit 1
fi
# and --threads overrides OMP_NUM_THREADS with the same result
sed "s|OUT|$tmp/p3|g" "$tmp/cfg.json" > "$tmp/cfg3.json"
OMP_NUM_THREADS=1 "$tmp/arachne" train --config "$tmp/cfg3.json" --threads 2 2> "$tmp/log3" || { cat "$tmp/log3"; exit 1; }
cmp "$tmp/p1.arpol" "$tmp/p3.arpol" || { echo "--threads 2 differs"; exit 1; }
# and a second run with 2 threads gives the same bytes as the first: nothing
# depends on wall time or on how the threads were scheduled
sed "s|OUT|$tmp/p4|g" "$tmp/cfg.json" > "$tmp/cfg4.json"
OMP_NUM_THREADS=2 "$tmp/arachne" train --config "$tmp/cfg4.json" 2> "$tmp/log4" || { cat "$tmp/log4"; exit 1; }
cmp "$tmp/p2.arpol" "$tmp/p4.arpol" || { echo "two runs with 2 threads differ"; exit 1; }
echo "policies trained with 1 and 2 threads are identical ($(wc -c < "$tmp/p1.arpol") bytes)"
