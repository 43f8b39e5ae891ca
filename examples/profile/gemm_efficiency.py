#!/usr/bin/env python3
"""Measure how close BF16 matrix products come to a GPU's peak, by size.

The profile generator (docs/profiles.md, "Method") prices every GEMM of a
layer as a roofline: 2·M·N·K FLOPs at peak · eff(min(M, N, K)), with
eff(m) = e_max · m / (m + m_half), or the bytes of both operands and the
result at the HBM bandwidth, whichever is slower.  This script times real
products of the shapes a transformer layer runs -- M tokens against the
weight shapes of a model's projections -- at a sweep of M, and writes one
JSON line per shape: seconds (median of --iters after --warmup, CUDA events),
achieved FLOP/s and the fraction of --peak.  "seconds" is the kernel's own
time (a batch of products replayed as one CUDA graph); "seconds_single" is one product
launched alone, which on an idle GPU includes the host's launch time.
bench/bench_profile_measured sets each line beside the generator's time for
the shape (it reads gemm-*.jsonl files from its --dir).

    python3 gemm_efficiency.py --peak 989e12 --out gemm.jsonl

Requires PyTorch with CUDA.  Not run in CI (tests only compile it).
"""

import argparse
import json
import os
import statistics
import sys

# (name, N, K): output and reduction widths of a layer's products; M is the
# token count.  Shapes of llama3-8b, qwen3-32b and the small experts of
# qwen3-30b-a3b (expert FFN 768).
SHAPES = (
    ("llama3-8b qkv", 6144, 4096),
    ("llama3-8b mlp-up", 28672, 4096),
    ("llama3-8b mlp-down", 4096, 14336),
    ("qwen3-32b mlp-up", 51200, 5120),
    ("qwen3-30b-a3b expert-up", 1536, 2048),
    ("qwen3-30b-a3b expert-down", 2048, 768),
)
M_LIST = (16, 64, 256, 1024, 4096, 16384, 65536)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Time BF16 matrix products of layer shapes at a sweep of token counts.")
    ap.add_argument("--peak", type=float, required=True, help="the GPU's dense BF16 peak in FLOP/s (e.g. 989e12)")
    ap.add_argument("--out", required=True, help="output file, one JSON object per line")
    ap.add_argument("--m", default=",".join(str(m) for m in M_LIST), help="comma-separated token counts M")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args(argv)
    if not args.peak > 0:
        ap.error("--peak must be > 0")
    try:
        args.m = sorted({int(x) for x in args.m.split(",") if x.strip()})
    except ValueError:
        ap.error("--m must be a comma-separated list of integers")
    if not args.m or args.m[0] < 1:
        ap.error("--m values must be >= 1")
    if args.warmup < 0 or args.iters < 1:
        ap.error("--warmup must be >= 0 and --iters >= 1")
    return args


def time_mm(torch, a, b, warmup, iters):
    """Median seconds of one product launched alone between two events: on
    an idle GPU this includes the host's launch time when it is longer than
    the kernel (small products in eager PyTorch)."""
    ts = []
    for it in range(warmup + iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.mm(a, b)
        e1.record()
        torch.cuda.synchronize()
        if it >= warmup:
            ts.append(e0.elapsed_time(e1) / 1e3)
    return statistics.median(ts)


def time_mm_queued(torch, a, b, single_s, warmup, iters):
    """Median seconds per product of a batch of products (at least about
    2 ms of work, at most 500 products) replayed as one CUDA graph: no host
    launch between them, so this is the kernels' own time.  Where graph
    capture fails, the batch is launched back to back from Python instead
    (then a product shorter than a launch still shows the launch time).
    Returns (seconds, products per batch, "graph" or "queued")."""
    reps = max(1, min(500, int(2e-3 / max(single_s, 1e-7))))
    out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    how = "graph"
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                torch.mm(a, b, out=out)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(reps):
                torch.mm(a, b, out=out)
        run = graph.replay
    except RuntimeError:
        how = "queued"

        def run():
            for _ in range(reps):
                torch.mm(a, b, out=out)
    ts = []
    for it in range(warmup + iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        e0.record()
        run()
        e1.record()
        torch.cuda.synchronize()
        if it >= warmup:
            ts.append(e0.elapsed_time(e1) / 1e3 / reps)
    return statistics.median(ts), reps, how


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        raise SystemExit("gemm_efficiency.py needs PyTorch")
    if not torch.cuda.is_available():
        raise SystemExit("gemm_efficiency.py needs a CUDA GPU")
    torch.manual_seed(0)
    rows = []
    for name, n, k in SHAPES:
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        for m in args.m:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            single = time_mm(torch, x, w, args.warmup, args.iters)
            s, reps, how = time_mm_queued(torch, x, w, single, args.warmup, args.iters)
            fl = 2.0 * m * n * k / s
            rows.append({"gpu": torch.cuda.get_device_name(), "shape": name, "m": m, "n": n, "k": k,
                         "seconds": s, "seconds_single": single, "batch": reps, "batch_launch": how, "flops": fl,
                         "of_peak": fl / args.peak, "bytes_per_s": 2.0 * (m * k + k * n + m * n) / s})
            print("%-26s M %6d  %9.1f us (alone %9.1f us)  %7.1f TFLOP/s  %5.3f of peak"
                  % (name, m, s * 1e6, single * 1e6, fl / 1e12, fl / args.peak), file=sys.stderr)
            del x
        del w
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
