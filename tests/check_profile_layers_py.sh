#!/bin/sh
# examples/profile/profile_layers.py and gemm_efficiency.py (they need
# PyTorch and a GPU to run; not run here) must at least compile, and their
# --help must work without torch.
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
PYTHONPYCACHEPREFIX="$tmp" "$py" -m py_compile examples/profile/profile_layers.py || exit 1
"$py" examples/profile/profile_layers.py --help > "$tmp/help.txt" 2>&1 || { cat "$tmp/help.txt"; exit 1; }
grep -q -- "--gpu-name" "$tmp/help.txt" || { echo "--help lacks --gpu-name"; exit 1; }
grep -q -- "--moe-experts" "$tmp/help.txt" || { echo "--help lacks --moe-experts"; exit 1; }
PYTHONPYCACHEPREFIX="$tmp" "$py" -m py_compile examples/profile/gemm_efficiency.py || exit 1
"$py" examples/profile/gemm_efficiency.py --help > "$tmp/help2.txt" 2>&1 || { cat "$tmp/help2.txt"; exit 1; }
grep -q -- "--peak" "$tmp/help2.txt" || { echo "gemm_efficiency.py --help lacks --peak"; exit 1; }
exit 0
