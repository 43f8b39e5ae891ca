#!/bin/sh
# Every flag, key and field an export prints exists in the target version it
# names: the lists in tests/data/flags/ were read from the projects' sources
# (each file's header gives the URL and commit).  Plans: one-template plans
# with uniform TP (dense with full recompute + distributed optimizer, MoE,
# DeepSeek MLA), a multi-template plan (must be explained), a plan with
# several micro-batch sizes (Sailor must refuse it), a context-parallel plan
# (Megatron and torchtitan take its degree; FlashFlex and Sailor must refuse).
# The searched plans keep context parallelism off so that FlashFlex and Sailor
# export them.
bin=${ARACHNE_BIN:-bin/arachne}
fail() { echo "$*"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not available"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
data=tests/data/flags

plan() { # NAME MODEL CLUSTER EXTRA...
    n=$1; m=$2; c=$3; shift 3
    "$bin" search --method random --budget 60 --model "$m" --cluster "$c" --json "$@" > "$t/$n.json" \
        || fail "search for $n failed"
}
plan dense llama3-8b a100-40:4x4 --global-batch 64 --recompute full --dist-optimizer --no-context-parallel
plan moe mixtral-8x7b h100:4x8 --global-batch 128 --no-context-parallel
plan mla deepseek-v3 h100:32x8 --global-batch 256 --seq-len 2048 --max-depth 16 --no-context-parallel
plan hetero llama3-8b a100-40:4x4,h100:2x8 --global-batch 96 --no-context-parallel
"$bin" price --parallel tp=2,cp=4,pp=2 --model llama3-8b --cluster h100:4x8 --global-batch 64 --seq-len 8192 --json \
    > "$t/cp.json" || fail "price --parallel with cp failed"

for n in dense moe mla hetero cp; do
    for f in megatron torchtitan torchtitan-cli; do
        "$bin" export --format $f "$t/$n.json" > "$t/$n.$f" || fail "export $f of $n failed"
    done
    if [ $n = cp ]; then
        "$bin" export --format flashflex "$t/cp.json" > "$t/cp.flashflex" 2> "$t/cp.flashflex.err" \
            && fail "flashflex export of a context-parallel plan accepted"
        grep -q "context parallelism" "$t/cp.flashflex.err" || fail "flashflex refusal: $(cat "$t/cp.flashflex.err")"
    else
        "$bin" export --format flashflex "$t/$n.json" > "$t/$n.flashflex" || fail "export flashflex of $n failed"
    fi
    "$bin" export --format sailor "$t/$n.json" > "$t/$n.sailor" 2> "$t/$n.sailor.err"
    echo $? > "$t/$n.sailor.rc"
done

python3 - "$t" "$data" <<'PY' || exit 1
import json, os, re, shlex, sys
t, data = sys.argv[1], sys.argv[2]
def flags(name):
    return {l.strip() for l in open(os.path.join(data, name)) if l.strip() and not l.startswith("#")}
mg15, mg12 = flags("megatron-core_v0.15.0.txt"), flags("megatron-core_v0.12.0.txt")
tt22, ttnew, ff = flags("torchtitan-v0.2.2.txt"), flags("torchtitan-b5bcd76.txt"), flags("flashflex-5ee1726.txt")
bad = []
def check(where, found, allowed):
    for f in found:
        if f not in allowed: bad.append("%s: %s" % (where, f))
def argv_flags(line):
    return [w for w in shlex.split(line) if w.startswith("--")]
for n in ("dense", "moe", "mla", "hetero", "cp"):
    plan = json.load(open("%s/%s.json" % (t, n)))
    ntmpl = len(plan["templates"])
    # megatron: argument lines, and the old-release fallback
    text = open("%s/%s.megatron" % (t, n)).read()
    lines = [l for l in text.splitlines() if l.startswith("--")]
    if len(lines) != ntmpl: bad.append("megatron %s: %d lines for %d templates" % (n, len(lines), ntmpl))
    for l in lines:
        check("megatron %s" % n, argv_flags(l), mg15)
        for need in ("--use-tp-pp-dp-mapping", "--bf16", "--hidden-size", "--num-attention-heads", "--seq-length"):
            if need not in argv_flags(l): bad.append("megatron %s: no %s" % (n, need))
        tp = int(re.search(r"--tensor-model-parallel-size (\d+)", l).group(1))
        if tp > 1 and "--sequence-parallel" not in l: bad.append("megatron %s: TP %d without --sequence-parallel" % (n, tp))
        cp = plan["templates"][0].get("cp", 1)
        if cp > 1 and "--context-parallel-size %d" % cp not in l: bad.append("megatron %s: no --context-parallel-size" % n)
        if plan["setup"]["dist_optimizer"] and "--use-distributed-optimizer" not in l:
            bad.append("megatron %s: no --use-distributed-optimizer" % n)
        old = re.sub(r' --pipeline-model-parallel-layout "[^"]*"', "", l)
        m = re.search(r"replace it with (--decoder-first-pipeline-num-layers \d+ --decoder-last-pipeline-num-layers \d+)", text)
        if m: old += " " + m.group(1)
        check("megatron %s (core_v0.12.0 form)" % n, argv_flags(old), mg12)
    if n == "moe" and "--num-experts 8 --moe-router-topk 2" not in text: bad.append("megatron moe: MoE flags")
    if n == "mla" and "--multi-latent-attention" not in text: bad.append("megatron mla: MLA flags")
    if ntmpl > 1 and "never share gradients" not in text: bad.append("megatron %s: multi-template not explained" % n)
    # torchtitan v0.2.2 TOML
    text = open("%s/%s.torchtitan" % (t, n)).read()
    sec = None
    for l in text.splitlines():
        if l.startswith("#") or not l.strip(): continue
        m = re.match(r"^\[(\w+)\]$", l)
        if m: sec = m.group(1); continue
        key = l.split("=")[0].strip()
        check("torchtitan %s" % n, ["%s.%s" % (sec, key)], tt22)
    if plan["setup"]["recompute"] == "selective" and 'selective_ac_option = "op"' not in text:
        bad.append("torchtitan %s: selective without op" % n)
    if ntmpl > 1 and "never share gradients" not in text: bad.append("torchtitan %s: multi-template not explained" % n)
    # torchtitan after the refactor: --section.option -> Class.field
    text = open("%s/%s.torchtitan-cli" % (t, n)).read()
    cls = {"parallelism": "ParallelismConfig", "training": "TrainingConfig"}
    for l in text.splitlines():
        if l.startswith("--"):
            for f in argv_flags(l):
                s, k = f[2:].split(".", 1)
                check("torchtitan-cli %s" % n, ["%s.%s" % (cls.get(s, s), k)], ttnew)
        for m in re.finditer(r"config\.parallelism\.(\w+)", l):
            check("torchtitan-cli %s" % n, ["ParallelismConfig." + m.group(1)], ttnew)
        for m in re.finditer(r"\b(\w+AC)\.Config\(\)", l):
            check("torchtitan-cli %s" % n, [m.group(1) + ".Config"], ttnew)
    if n == "cp":
        if "context_parallel_degree = 4" not in open("%s/cp.torchtitan" % t).read(): bad.append("torchtitan cp: degree")
        if "--parallelism.context_parallel_degree 4" not in text: bad.append("torchtitan-cli cp: degree")
        rc = int(open("%s/cp.sailor.rc" % t).read())
        if rc != 1 or "context parallelism" not in open("%s/cp.sailor.err" % t).read():
            bad.append("sailor cp: context parallelism not refused (rc %d)" % rc)
        continue
    # flashflex
    text = open("%s/%s.flashflex" % (t, n)).read()
    lines = [l for l in text.splitlines() if l.startswith("--")]
    if len(lines) != 1: bad.append("flashflex %s: %d argument lines" % (n, len(lines)))
    for l in lines:
        check("flashflex %s" % n, argv_flags(l), ff)
        words = shlex.split(l)
        pipes = sum(tt["replicas"] for tt in plan["templates"])
        i = words.index("--global_bsz_size"); j = words.index("--chunks")
        if len(words[i + 1:j]) != pipes: bad.append("flashflex %s: %d batches for %d pipelines" % (n, len(words[i + 1:j]), pipes))
    # sailor: refused with several micro-batch sizes, else Sailor's nesting
    rc = int(open("%s/%s.sailor.rc" % (t, n)).read())
    mbs = {tt["micro_batch"] for tt in plan["templates"]}
    if len(mbs) > 1:
        if rc != 1 or "one micro-batch size" not in open("%s/%s.sailor.err" % (t, n)).read():
            bad.append("sailor %s: several micro-batch sizes not refused (rc %d)" % (n, rc))
        continue
    if rc != 0: bad.append("sailor %s: exit %d" % (n, rc)); continue
    d = json.load(open("%s/%s.sailor" % (t, n)))
    if d["mbs"] != mbs.pop(): bad.append("sailor %s: mbs" % n)
    for p, tt in zip(d["pipeline_list"], plan["templates"]):
        for s, stage in enumerate(p["tmp_per_stage"]):
            if len(stage) != tt["replicas"]: bad.append("sailor %s: replicas of stage %d" % (n, s))
            for rep in stage:
                ok = (isinstance(rep, list) and len(rep) == 2 and isinstance(rep[1], int) and len(rep[0]) == 1
                      and isinstance(rep[0][0][0], str) and isinstance(rep[0][0][1], int) and rep[0][0][2] == "us-central1-a")
                if not ok: bad.append("sailor %s: replica entry %r" % (n, rep)); break
        ids = [i for st in p["layers_per_stage"] for i in st]
        if ids != list(range(len(ids))): bad.append("sailor %s: layer ids not 0..L+1 in order" % n)
if bad:
    print("\n".join(bad[:40])); sys.exit(1)
PY
# An interleaved plan (price --parallel vp=2): Megatron's layout lists pp x vp
# chunks (the old releases' form takes --num-layers-per-virtual-pipeline-stage),
# torchtitan runs Interleaved1F1B over pp x vp model parts, and FlashFlex and
# Sailor refuse it with a message.
"$bin" price --parallel tp=1,pp=4,vp=2,dp=4 --model llama3-8b --cluster h100:2x8 --global-batch 64 --json \
    > "$t/vp.json" || fail "price --parallel vp=2 failed"
for f in megatron torchtitan torchtitan-cli; do
    "$bin" export --format $f "$t/vp.json" > "$t/vp.$f" || fail "export $f of the vp plan failed"
done
for f in flashflex sailor; do
    "$bin" export --format $f "$t/vp.json" > "$t/vp.$f" 2> "$t/vp.$f.err"; rc=$?
    [ $rc -eq 1 ] || fail "export $f of the vp plan: exit $rc, want a refusal"
    grep -q "interleaves its pipeline (vp 2" "$t/vp.$f.err" || fail "export $f of the vp plan: $(cat "$t/vp.$f.err")"
done
python3 - "$t" "$data" <<'PY' || exit 1
import os, re, shlex, sys
t, data = sys.argv[1], sys.argv[2]
def flags(name):
    return {l.strip() for l in open(os.path.join(data, name)) if l.strip() and not l.startswith("#")}
mg15, mg12 = flags("megatron-core_v0.15.0.txt"), flags("megatron-core_v0.12.0.txt")
tt22, ttnew = flags("torchtitan-v0.2.2.txt"), flags("torchtitan-b5bcd76.txt")
bad = []
text = open(t + "/vp.megatron").read()
line = [l for l in text.splitlines() if l.startswith("--")][0]
words = [w for w in shlex.split(line) if w.startswith("--")]
bad += ["megatron vp: %s" % w for w in words if w not in mg15]
layout = re.search(r'--pipeline-model-parallel-layout "([^"]*)"', line).group(1)
segs = layout.split("|")
if len(segs) != 8 or [s.count("t") for s in segs] != [4] * 8 or not layout.startswith("E") or not layout.endswith("L"):
    bad.append("megatron vp: layout %s, want 8 chunks of 4 blocks" % layout)
m = re.search(r"replace it with (--num-layers-per-virtual-pipeline-stage 4)", text)
if not m: bad.append("megatron vp: no old-release form")
else:
    old = re.sub(r' --pipeline-model-parallel-layout "[^"]*"', "", line) + " " + m.group(1)
    bad += ["megatron vp (core_v0.12.0 form): %s" % w for w in shlex.split(old) if w.startswith("--") and w not in mg12]
text = open(t + "/vp.torchtitan").read()
if 'pipeline_parallel_schedule = "Interleaved1F1B"' not in text: bad.append("torchtitan vp: schedule")
fq = re.search(r"module_fqns_per_model_part = (.*)", text).group(1)
parts = eval(fq)
if len(parts) != 8 or parts[0][0] != "tok_embeddings" or parts[1][0] != "layers.4" or parts[4][0] != "layers.16":
    bad.append("torchtitan vp: model parts %s" % fq[:120])
text = open(t + "/vp.torchtitan-cli").read()
if "--parallelism.pipeline_parallel_schedule Interleaved1F1B" not in text: bad.append("torchtitan-cli vp: schedule")
if bad:
    print("\n".join(bad)); sys.exit(1)
PY
exit 0
