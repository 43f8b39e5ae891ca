#!/usr/bin/env python3
"""Rewrites the fidelity summary block of docs/cost-model.md from a fresh
bench_fidelity run (tests/check_fidelity.sh fails when they differ).
Usage: python3 tests/fidelity_doc_update.py [BENCH_FIDELITY]"""
import re
import subprocess
import sys

bench = sys.argv[1] if len(sys.argv) > 1 else "bin/bench_fidelity"
out = subprocess.run([bench], capture_output=True, text=True, check=True).stdout
keep = [l for l in out.splitlines()
        if re.match(r"^  (all|dense|moe|A100|H100|B200|GB200|fsdp) ", l) or l.startswith("expressed ")]
path = "docs/cost-model.md"
text = open(path, encoding="utf-8").read()
a = text.index("<!-- fidelity-summary -->")
b = text.index("<!-- /fidelity-summary -->")
text = text[:a] + "<!-- fidelity-summary -->\n```\n" + "\n".join(keep) + "\n```\n" + text[b:]
open(path, "w", encoding="utf-8").write(text)
