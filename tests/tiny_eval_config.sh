# tiny_eval_config.sh -- sourced by check_eval_cli.sh and valgrind_cli.sh:
# tiny_eval_config DIR writes DIR/eval.json, a one-composition eval config
# (8 GPUs, 2 samples, a 16-evaluation flat policy saved to DIR/flat.arflat)
# that runs in well under a second natively.
tiny_eval_config() {
    cat > "$1/eval.json" <<JSON
{
 "format": "arachne-eval", "version": 1, "samples": 2, "seed": 1, "random_factor": 2,
 "exhaustive": {"max_gpus": 8, "max_templates": 1, "max_depth": 2, "time_budget_s": 0},
 "flat": {"evaluations": 16, "group": 4, "hidden": 16, "layers": 1, "seed": 1, "save": "$1/flat.arflat",
  "train": [ {"model": "llama3-8b", "cluster": "h100:1x8", "global_batch": 64} ]},
 "compositions": [
  {"name": "tiny", "model": "llama3-8b", "cluster": "h100:1x8", "global_batch": 64}
 ]
}
JSON
}
