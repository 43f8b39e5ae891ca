"""Shared helpers of the Python tests: puts examples/python on sys.path,
imports the binding, and offers skips for library parts not built yet."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
PYDIR = os.path.join(REPO, "examples", "python")
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)

import arachne  # noqa: E402

# A small heterogeneous cluster: planning and profile generation stay fast.
SMALL_SPEC = "a100-40:2x4,h100:1x8"
BIG_SPEC = "a100-40:32x4,a6000:8x4+16x1,h100:16x8"
LLAMA3_8B_PARAMS = 8030261248


def read(path, mode="r"):
    """The whole contents of a file (closed afterwards)."""
    with open(path, mode) as f:
        return f.read()


def need(*names):
    """Skips the calling test when the library lacks one of the C functions."""
    missing = [n for n in names if not arachne.has_function(n)]
    if missing:
        more = " (+%d more)" % (len(missing) - 1) if len(missing) > 1 else ""
        raise unittest.SkipTest("the library does not export %s%s yet" % (missing[0], more))


def sailor_dir():
    """Sailor's measured profiles: $ARACHNE_SHARED_DATA, else the vendored copy."""
    for base in (os.environ.get("ARACHNE_SHARED_DATA"),
                 os.path.join(REPO, "tests", "data", "sailor-profiles")):
        if base and os.path.isfile(os.path.join(base, "profiles.json")):
            return base
    return None


def hand_plan():
    """A plan written by hand for llama3-8b on SMALL_SPEC: two replicas of a
    two-stage pipeline, TP 2, on the H100 node (node 2, after the two A100 nodes)."""
    ranks = []
    for rep in range(2):
        for stage in range(2):
            for tp_rank in range(2):
                r = len(ranks)
                ranks.append({"rank": r, "node": 2, "gpu": r, "replica": rep, "stage": stage, "tp_rank": tp_rank})
    stage = {"gpu": "H100", "tp": 2, "ep": 1, "etp": 1, "edp": 4, "stage_s": 0, "memory_bytes": 0}
    return {"format": "arachne-plan", "version": 1, "model": "llama3-8b", "cluster": SMALL_SPEC,
            "global_batch": 64, "seq_len": 4096, "iteration_s": 0, "iter_per_s": 0, "samples_per_s": 0,
            "tokens_per_s": 0, "mfu": 0, "gpus_used": 8, "gpus_total": 16,
            "templates": [{"replicas": 2, "micro_batch": 1, "micro_batches": 32,
                           "stages": [dict(stage, layers=[0, 16]), dict(stage, layers=[16, 32])],
                           "ranks": ranks}],
            "planner": {"method": "hand", "planning_s": 0, "evaluations": 0}}
