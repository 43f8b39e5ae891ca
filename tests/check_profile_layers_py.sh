#!/bin/sh
# examples/profile/profile_layers.py (needs PyTorch and a GPU to run; not run
# here) must at least compile, and its --help must work without torch.
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
PYTHONPYCACHEPREFIX="$tmp" "$py" -m py_compile examples/profile/profile_layers.py || exit 1
"$py" examples/profile/profile_layers.py --help > "$tmp/help.txt" 2>&1 || { cat "$tmp/help.txt"; exit 1; }
grep -q -- "--gpu-name" "$tmp/help.txt" || { echo "--help lacks --gpu-name"; exit 1; }
exit 0
