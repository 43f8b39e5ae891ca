#!/usr/bin/env python3
"""Measure a libarachne profile table on your own GPU.

Builds one layer of each kind of a model (embedding, dense block, MoE block,
head) with the real tensor shapes -- RMSNorm, grouped-query attention through
torch.nn.functional.scaled_dot_product_attention (FlashAttention when the
build has it), SwiGLU (or GELU) MLP, MoE with top-k routing and shared
experts, MLA projections for DeepSeek-style models -- and times forward and
backward with CUDA events at every micro-batch size in {1, 2, 4, 8, 16, 32}
(stopping at the first out-of-memory).  It records the activation bytes the
layer keeps for backward and writes an "arachne-profile" JSON file
(docs/formats.md, "Profile") that `arachne_profile_load()` reads.

Single GPU (TP = 1):
    python3 profile_layers.py --gpu-name H100 --model llama3-8b --seq-len 4096 --out h100.json

Tensor parallel (TP = number of processes, inside one node):
    torchrun --nproc-per-node 4 profile_layers.py --gpu-name H100 --model llama3-8b \
        --out h100.json --merge
Each rank builds its 1/TP slice (attention heads, FFN columns, vocabulary rows:
a simple Megatron column/row split).  fwd_s / bwd_s are the per-rank compute
times without communication; tp_comm_s is measured separately by timing the
all-reduces Megatron issues for that layer (4 per block, 1 for the
embedding, 1 for the head) on tensors of the real size.  Run once per TP
degree with --merge to collect them in one file.

--model takes a name of the presets below, a model JSON file ("arachne-model",
e.g. from `arachne models`), or any name `arachne models --json NAME` knows
(the arachne binary is found with --arachne or on PATH).

Requires PyTorch >= 2.1 with CUDA.  Not run in CI (tests only compile it).
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys

# Inline copies of some presets (same numbers as src/model_preset.c).
PRESETS = {
    "llama3-8b": dict(blocks=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=128256,
                      gated_mlp=True, qk_norm=False),
    "qwen3-8b": dict(blocks=36, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=12288, vocab=151936,
                     gated_mlp=True, qk_norm=True),
    "qwen3-32b": dict(blocks=64, hidden=5120, heads=64, kv_heads=8, head_dim=128, ffn=25600, vocab=151936,
                      gated_mlp=True, qk_norm=True),
    "qwen3-30b-a3b": dict(blocks=48, hidden=2048, heads=32, kv_heads=4, head_dim=128, ffn=0, vocab=151936,
                          experts=128, top_k=8, expert_ffn=768, gated_mlp=True, qk_norm=True),
    "mixtral-8x7b": dict(blocks=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=0, vocab=32000,
                         experts=8, top_k=2, expert_ffn=14336, gated_mlp=True, qk_norm=False),
}

KINDS = ("embed", "dense", "moe", "head")
SDPA_GQA = False  # set in main(): scaled_dot_product_attention takes enable_gqa (PyTorch >= 2.5)
MOE_GROUPED = False  # set in main(): run the routed experts as grouped GEMMs (--moe-experts)
MBS_LIST = (1, 2, 4, 8, 16, 32)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Measure per-layer fwd/bwd seconds and activation bytes; "
                                             "write an arachne-profile JSON file.")
    ap.add_argument("--gpu-name", required=True,
                    help="GPU type name to record (canonical catalog name, e.g. H100, A100-40, A6000)")
    ap.add_argument("--model", required=True, help="preset name, model JSON file, or a name `arachne models` knows")
    ap.add_argument("--seq-len", type=int, default=4096, help="tokens per sequence (default 4096)")
    ap.add_argument("--out", required=True, help="output profile JSON file")
    ap.add_argument("--merge", action="store_true",
                    help="add to (and replace same keys in) an existing --out file of the same model and seq-len")
    ap.add_argument("--mbs", default=",".join(str(m) for m in MBS_LIST),
                    help="comma-separated micro-batch sizes (default 1,2,4,8,16,32)")
    ap.add_argument("--kinds", default="embed,dense,moe,head", help="layer kinds to measure")
    ap.add_argument("--warmup", type=int, default=3, help="untimed iterations per point")
    ap.add_argument("--iters", type=int, default=10, help="timed iterations per point (median is kept)")
    ap.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16")
    ap.add_argument("--moe-experts", choices=("auto", "grouped", "loop"), default="auto",
                    help="routed experts as grouped GEMMs (torch._grouped_mm: PyTorch >= 2.8, compute capability "
                         ">= 9.0) or as one GEMM chain per expert; auto: grouped where available (default)")
    ap.add_argument("--arachne", default=None, help="path of the arachne binary (for --model lookups)")
    args = ap.parse_args(argv)
    if args.seq_len < 1:
        ap.error("--seq-len must be >= 1")
    try:
        args.mbs = sorted({int(x) for x in args.mbs.split(",") if x.strip()})
    except ValueError:
        ap.error("--mbs must be a comma-separated list of integers")
    if not args.mbs or args.mbs[0] < 1:
        ap.error("--mbs values must be >= 1")
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for k in args.kinds:
        if k not in KINDS:
            ap.error("unknown kind %r (embed, dense, moe, head)" % k)
    if args.warmup < 0 or args.iters < 1:
        ap.error("--warmup must be >= 0 and --iters >= 1")
    return args


def load_model_config(name, arachne=None):
    """Returns (model name, config dict) from a preset, a JSON file or `arachne models --json`."""
    if os.path.isfile(name):
        with open(name) as f:
            d = json.load(f)
        if d.get("format") != "arachne-model":
            raise SystemExit("%s: not an arachne-model file" % name)
        return d["name"], normalise(d)
    if name in PRESETS:
        return name, normalise(dict(PRESETS[name]))
    exe = arachne or shutil.which("arachne")
    if exe:
        r = subprocess.run([exe, "models", "--json", name], capture_output=True, text=True)
        if r.returncode == 0:
            rows = json.loads(r.stdout)
            if rows:
                return rows[0]["name"], normalise(rows[0])
        raise SystemExit("arachne models: %s" % r.stderr.strip())
    raise SystemExit("unknown model %r: not a preset here, not a file, and no arachne binary found" % name)


def normalise(d):
    c = dict(blocks=1, hidden=0, heads=1, kv_heads=1, head_dim=0, ffn=0, vocab=1, experts=0, top_k=0,
             shared_experts=0, expert_ffn=0, dense_prefix=0, gated_mlp=True, qk_norm=False, mla=None)
    for k in c:
        if k in d and d[k] is not None:
            c[k] = d[k]
    if isinstance(c["mla"], bool):  # `arachne models --json` only says whether MLA is used
        if c["mla"]:
            raise SystemExit("MLA models need the model JSON file (it has the MLA ranks)")
        c["mla"] = None
    if not c["head_dim"]:
        c["head_dim"] = c["hidden"] // c["heads"]
    return c


def has_kind(cfg, kind):
    if kind in ("embed", "head"):
        return True
    moe_blocks = cfg["blocks"] - cfg["dense_prefix"] if cfg["experts"] > 0 else 0
    if kind == "moe":
        return moe_blocks > 0
    return cfg["blocks"] - moe_blocks > 0


def build_layers(torch, cfg, tp, dtype, device):
    """Returns {kind: (module factory, input factory)} for one rank of a TP group of tp."""
    nn = torch.nn
    F = torch.nn.functional
    h = cfg["hidden"]

    class RMSNorm(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = nn.Parameter(torch.ones(n))
            self.eps = 1e-6

        def forward(self, x):
            if hasattr(F, "rms_norm"):
                return F.rms_norm(x, (x.shape[-1],), self.w, self.eps)
            v = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(v + self.eps)).to(x.dtype) * self.w

    def rope(x):
        # rotary embedding on the last dimension (real shapes; the exact
        # frequencies do not change the timing)
        s, d = x.shape[-2], x.shape[-1]
        half = d // 2
        pos = torch.arange(s, device=x.device, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(half, device=x.device, dtype=torch.float32) / max(half, 1)))
        ang = torch.outer(pos, inv)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        x1, x2 = x[..., :half], x[..., half:2 * half]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos, x[..., 2 * half:]], dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.hl = cfg["heads"] // tp
            self.kvl = max(1, cfg["kv_heads"] // tp)
            d = cfg["head_dim"]
            self.d = d
            self.mla = cfg["mla"]
            if self.mla:
                m = self.mla
                self.dqk = m["qk_nope_dim"] + m["qk_rope_dim"]
                self.dv = m["v_head_dim"]
                if m["q_lora_rank"] > 0:
                    self.q_a = nn.Linear(h, m["q_lora_rank"], bias=False)
                    self.q_norm = RMSNorm(m["q_lora_rank"])
                    self.q_b = nn.Linear(m["q_lora_rank"], self.hl * self.dqk, bias=False)
                else:
                    self.q_a = None
                    self.q = nn.Linear(h, self.hl * self.dqk, bias=False)
                self.kv_a = nn.Linear(h, m["kv_lora_rank"] + m["qk_rope_dim"], bias=False)
                self.kv_norm = RMSNorm(m["kv_lora_rank"])
                self.kv_b = nn.Linear(m["kv_lora_rank"], self.hl * (m["qk_nope_dim"] + self.dv), bias=False)
                self.o = nn.Linear(self.hl * self.dv, h, bias=False)
            else:
                self.qkv = nn.Linear(h, (self.hl + 2 * self.kvl) * d, bias=False)
                self.o = nn.Linear(self.hl * d, h, bias=False)
                self.qn = RMSNorm(d) if cfg["qk_norm"] else None
                self.kn = RMSNorm(d) if cfg["qk_norm"] else None

        def forward(self, x):
            b, s, _ = x.shape
            if self.mla:
                m = self.mla
                q = self.q_b(self.q_norm(self.q_a(x))) if self.q_a is not None else self.q(x)
                q = q.view(b, s, self.hl, self.dqk).transpose(1, 2)
                kv_a = self.kv_a(x)
                c, k_rope = kv_a.split([m["kv_lora_rank"], m["qk_rope_dim"]], dim=-1)
                kv = self.kv_b(self.kv_norm(c)).view(b, s, self.hl, m["qk_nope_dim"] + self.dv).transpose(1, 2)
                k_nope, v = kv.split([m["qk_nope_dim"], self.dv], dim=-1)
                k_rope = rope(k_rope.unsqueeze(1)).expand(b, self.hl, s, m["qk_rope_dim"])
                k = torch.cat([k_nope, k_rope], dim=-1)
                q = torch.cat([q[..., :m["qk_nope_dim"]], rope(q[..., m["qk_nope_dim"]:])], dim=-1)
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.o(out.transpose(1, 2).reshape(b, s, self.hl * self.dv))
            qkv = self.qkv(x).view(b, s, self.hl + 2 * self.kvl, self.d)
            q, k, v = qkv.split([self.hl, self.kvl, self.kvl], dim=2)
            if self.qn is not None:
                q, k = self.qn(q), self.kn(k)
            q, k, v = rope(q.transpose(1, 2)), rope(k.transpose(1, 2)), v.transpose(1, 2)
            if self.kvl != self.hl:
                if SDPA_GQA:
                    # the kernel reads each KV head for its group of query
                    # heads, as Megatron's fused attention does
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                    return self.o(out.transpose(1, 2).reshape(b, s, self.hl * self.d))
                rep = self.hl // self.kvl
                k = k.repeat_interleave(rep, dim=1)
                v = v.repeat_interleave(rep, dim=1)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o(out.transpose(1, 2).reshape(b, s, self.hl * self.d))

    class MLP(nn.Module):
        def __init__(self, f):
            super().__init__()
            fl = max(1, f // tp)
            self.gated = cfg["gated_mlp"]
            self.up = nn.Linear(h, (2 if self.gated else 1) * fl, bias=False)
            self.down = nn.Linear(fl, h, bias=False)

        def forward(self, x):
            u = self.up(x)
            if self.gated:
                g, u = u.chunk(2, dim=-1)
                return self.down(F.silu(g) * u)
            return self.down(F.gelu(u))

    def route(router, t, k, e):
        """Top-k routing of the tokens t over e experts, as (token, slot)
        pairs sorted by expert: the gate weight of each pair (a column), its
        token row, and the pairs per expert (on the GPU)."""
        probs = F.softmax(router(t).float(), dim=-1)
        w, idx = probs.topk(k, dim=-1)
        w = (w / w.sum(-1, keepdim=True)).to(t.dtype)
        flat = idx.reshape(-1)
        order = flat.argsort(stable=True)
        return w.reshape(-1).index_select(0, order).unsqueeze(-1), order // k, torch.bincount(flat, minlength=e)

    def combine(t, rows, y, shared):
        """Adds each weighted expert output back to its token, then the
        shared experts."""
        out = torch.zeros_like(t).index_add(0, rows, y)
        for s in shared:
            out = out + s(t)
        return out

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Linear(h, cfg["experts"], bias=False)
            self.experts = nn.ModuleList([MLP(cfg["expert_ffn"]) for _ in range(cfg["experts"])])
            self.shared = nn.ModuleList([MLP(cfg["expert_ffn"]) for _ in range(cfg["shared_experts"])])
            self.k = cfg["top_k"]

        def forward(self, x):
            t = x.reshape(-1, x.shape[-1])
            ws, rows, counts = route(self.router, t, self.k, len(self.experts))
            # one contiguous slice per expert; the token counts are read once
            # (one host sync per layer, as a framework's dispatcher does)
            ys = [expert(piece) for expert, piece in zip(self.experts, t.index_select(0, rows).split(counts.tolist()))
                  if piece.shape[0] > 0]
            return combine(t, rows, torch.cat(ys) * ws, self.shared).view(x.shape)

    class GroupedMoE(nn.Module):
        """The routed experts as two grouped GEMMs over expert-sorted tokens
        (torch._grouped_mm), the way Megatron's and torchtitan's MoE layers
        run them: one kernel per projection for all experts, no host sync."""

        def __init__(self):
            super().__init__()
            e, fl = cfg["experts"], max(1, cfg["expert_ffn"] // tp)
            self.gated = cfg["gated_mlp"]
            self.router = nn.Linear(h, e, bias=False)
            # made on the GPU: the experts of a large MoE block are billions
            # of weights, slow to draw on the host
            self.w_up = nn.Parameter(torch.empty(e, (2 if self.gated else 1) * fl, h, device=device,
                                                 dtype=dtype).normal_(0.0, 0.02))
            self.w_down = nn.Parameter(torch.empty(e, h, fl, device=device, dtype=dtype).normal_(0.0, 0.02))
            self.shared = nn.ModuleList([MLP(cfg["expert_ffn"]) for _ in range(cfg["shared_experts"])])
            self.k = cfg["top_k"]
            self.e = e

        def forward(self, x):
            t = x.reshape(-1, x.shape[-1])
            ws, rows, counts = route(self.router, t, self.k, self.e)
            offs = torch.cumsum(counts, 0).to(torch.int32)
            u = torch._grouped_mm(t.index_select(0, rows), self.w_up.transpose(-2, -1), offs=offs)
            if self.gated:
                g, u = u.chunk(2, dim=-1)
                a = F.silu(g) * u
            else:
                a = F.gelu(u)
            y = torch._grouped_mm(a, self.w_down.transpose(-2, -1), offs=offs)
            return combine(t, rows, y * ws, self.shared).view(x.shape)

    class Block(nn.Module):
        def __init__(self, moe):
            super().__init__()
            self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
            self.attn = Attention()
            self.mlp = (GroupedMoE() if MOE_GROUPED else MoE()) if moe else MLP(cfg["ffn"])

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            return x + self.mlp(self.n2(x))

    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.e = nn.Embedding(max(1, cfg["vocab"] // tp), h)

        def forward(self, ids):
            return self.e(ids)

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.n = RMSNorm(h)
            self.out = nn.Linear(h, max(1, cfg["vocab"] // tp), bias=False)

        def forward(self, x, labels):
            logits = self.out(self.n(x)).float()
            # The vocabulary-parallel loss is a plain cross-entropy over this
            # rank's slice (its all-reduces are counted in tp_comm_s).
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))

    def make(mod):
        return lambda: mod().to(device=device, dtype=dtype)

    vocab_l = max(1, cfg["vocab"] // tp)
    hidden_in = lambda b, s: torch.randn(b, s, h, device=device, dtype=dtype, requires_grad=True)
    return {
        "embed": (make(Embed), lambda b, s: (torch.randint(0, vocab_l, (b, s), device=device),)),
        "dense": (make(lambda: Block(False)), lambda b, s: (hidden_in(b, s),)),
        "moe": (make(lambda: Block(True)), lambda b, s: (hidden_in(b, s),)),
        "head": (make(Head), lambda b, s: (hidden_in(b, s), torch.randint(0, vocab_l, (b, s), device=device))),
    }


def oom_types(torch):
    t = [RuntimeError]
    for name in ("OutOfMemoryError",):
        if hasattr(torch, name):
            t.insert(0, getattr(torch, name))
        if hasattr(torch.cuda, name):
            t.insert(0, getattr(torch.cuda, name))
    return tuple(t)


def is_oom(e):
    return "out of memory" in str(e).lower()


def time_point(torch, layer, inputs, warmup, iters):
    """Median forward and backward seconds, and bytes kept for backward."""
    fwd, bwd = [], []
    act = 0
    for it in range(warmup + iters):
        layer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        e0.record()
        y = layer(*inputs)
        e1.record()
        torch.cuda.synchronize()
        kept = torch.cuda.memory_allocated() - base - y.numel() * y.element_size()
        g = torch.ones_like(y) if y.dim() == 0 else torch.randn_like(y)
        torch.cuda.synchronize()
        e1b = torch.cuda.Event(enable_timing=True)
        e1b.record()
        y.backward(g)
        e2.record()
        torch.cuda.synchronize()
        if it >= warmup:
            fwd.append(e0.elapsed_time(e1) / 1e3)
            bwd.append(e1b.elapsed_time(e2) / 1e3)
            act = max(act, kept)
        del y, g
    return statistics.median(fwd), statistics.median(bwd), max(0, act)


def time_allreduce(torch, dist, numel, dtype, count, warmup, iters):
    """Median seconds of `count` all-reduces of numel elements."""
    if count == 0:
        return 0.0
    buf = torch.randn(numel, device="cuda", dtype=dtype)
    ts = []
    for it in range(warmup + iters):
        torch.cuda.synchronize()
        dist.barrier()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(count):
            dist.all_reduce(buf)
        e1.record()
        torch.cuda.synchronize()
        if it >= warmup:
            ts.append(e0.elapsed_time(e1) / 1e3)
    return statistics.median(ts)


def torch_at_least(torch, major, minor):
    try:
        v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    except ValueError:
        return False
    return v >= (major, minor)


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        raise SystemExit("profile_layers.py needs PyTorch (pip install torch)")
    if not torch.cuda.is_available():
        raise SystemExit("profile_layers.py needs a CUDA GPU")
    dist = None
    tp, rank = 1, 0
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch.distributed as dist
        dist.init_process_group("nccl")
        tp, rank = dist.get_world_size(), dist.get_rank()
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
        if tp & (tp - 1):
            raise SystemExit("the TP degree (world size) must be a power of two")
    global SDPA_GQA
    SDPA_GQA = torch_at_least(torch, 2, 5)
    global MOE_GROUPED
    grouped_ok = (torch_at_least(torch, 2, 8) and hasattr(torch, "_grouped_mm")
                  and torch.cuda.get_device_capability()[0] >= 9)
    if args.moe_experts == "grouped" and not grouped_ok:
        raise SystemExit("--moe-experts grouped needs torch._grouped_mm (PyTorch >= 2.8) on compute capability >= 9.0")
    MOE_GROUPED = args.moe_experts == "grouped" or (args.moe_experts == "auto" and grouped_ok)
    name, cfg = load_model_config(args.model, args.arachne)
    if cfg["heads"] % tp:
        raise SystemExit("%d heads do not split over TP %d" % (cfg["heads"], tp))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    device = torch.device("cuda")
    torch.manual_seed(0)
    layers = build_layers(torch, cfg, tp, dtype, device)
    s = args.seq_len
    entries = []
    oom = oom_types(torch)
    for kind in args.kinds:
        if not has_kind(cfg, kind):
            continue
        make_layer, make_inputs = layers[kind]
        try:
            layer = make_layer()
        except oom as e:
            if not is_oom(e):
                raise
            print("%s: the layer itself does not fit; skipped" % kind, file=sys.stderr)
            continue
        for mbs in args.mbs:
            stop = False
            try:
                inputs = make_inputs(mbs, s)
                f, b, act = time_point(torch, layer, inputs, args.warmup, args.iters)
            except oom as e:
                if not is_oom(e):
                    raise
                stop = True
            if dist is not None:  # every rank stops at the same micro-batch
                flag = torch.tensor([1 if stop else 0], device=device)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                stop = bool(flag.item())
            if stop:
                print("%s: out of memory at mbs %d; larger ones skipped" % (kind, mbs), file=sys.stderr)
                break
            comm = 0.0
            if dist is not None:
                n_ar = {"embed": 1, "dense": 4, "moe": 4, "head": 1}[kind]
                comm = time_allreduce(torch, dist, mbs * s * cfg["hidden"], dtype, n_ar, args.warmup, args.iters)
                vals = torch.tensor([f, b, comm, float(act)], device=device, dtype=torch.float64)
                dist.all_reduce(vals, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
                f, b, comm, act = vals.tolist()
            entries.append({"gpu": args.gpu_name, "kind": kind, "tp": tp, "mbs": mbs,
                            "fwd_s": f, "bwd_s": b, "tp_comm_s": comm, "act_bytes": float(act)})
            if rank == 0:
                print("%-6s tp %d mbs %3d  fwd %9.3f ms  bwd %9.3f ms  comm %8.3f ms  act %9.1f MiB"
                      % (kind, tp, mbs, f * 1e3, b * 1e3, comm * 1e3, act / 2**20), file=sys.stderr)
            del inputs
            torch.cuda.empty_cache()
        del layer
        torch.cuda.empty_cache()
    if rank == 0:
        write_profile(args, name, cfg, entries, torch)
    if dist is not None:
        dist.barrier()
        dist.destroy_process_group()
    return 0


def write_profile(args, name, cfg, entries, torch):
    doc = {"format": "arachne-profile", "version": 1, "model": name, "seq_len": args.seq_len,
           "source": "profile_layers.py on %s, torch %s, %s%s" % (
               torch.cuda.get_device_name(), torch.__version__, args.dtype,
               (", grouped experts" if MOE_GROUPED else ", looped experts") if has_kind(cfg, "moe") else ""),
           "entries": []}
    keyed = {}
    if args.merge and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        if old.get("model") != name or old.get("seq_len") != args.seq_len:
            raise SystemExit("%s holds model %r at seq %r; cannot merge %r at seq %d"
                             % (args.out, old.get("model"), old.get("seq_len"), name, args.seq_len))
        for e in old.get("entries", []):
            keyed[(e["gpu"], e["kind"], e["tp"], e["mbs"])] = e
    for e in entries:
        for k in ("fwd_s", "bwd_s", "tp_comm_s", "act_bytes"):
            if not math.isfinite(e[k]) or e[k] < 0:
                raise SystemExit("bad measurement %s = %r for %s" % (k, e[k], e))
        keyed[(e["gpu"], e["kind"], e["tp"], e["mbs"])] = e
    order = {k: i for i, k in enumerate(KINDS)}
    doc["entries"] = [keyed[k] for k in sorted(keyed, key=lambda k: (k[0].lower(), order[k[1]], k[2], k[3]))]
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    print("wrote %s (%d entries)" % (args.out, len(doc["entries"])), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
