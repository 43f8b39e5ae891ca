/* bench_fidelity.c -- the cost model against measured training runs.
 *
 * Reads tests/data/published-runs.json (71 measured BF16 pre-training runs
 * with their sources), prices every row it can express with
 * arachne_plan_from_parallel -- the published TP / PP / DP / micro-batch /
 * EP, global batch and sequence length, a generated profile for the row's
 * architecture and GPU -- and compares the predicted tokens per second per
 * GPU with the published one.  Rows the model cannot express are listed
 * with the reason, never dropped.  Prints a table, a summary (median,
 * 90th percentile and worst |error|; dense and MoE; per GPU type) and one
 * JSON line per row plus one summary line.
 *
 *   bench_fidelity [--data FILE] [--check] [--rows ID,ID,...] [--parts]
 *
 * --check exits 1 unless the calibration targets hold (docs/cost-model.md,
 * "Fidelity"): median |error| <= 10 % (overall, dense and MoE), 90th
 * percentile <= 20 %, worst <= 35 %.  --parts prints each row's per-stage
 * breakdown (compute, TP, EP, send, sync) for diagnosis. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"
#include "bench_stats.h"
#include "json.h"
#include "plan.h"
#include "profile.h"

#define MAX_ROWS 256

typedef struct result {
    long id;
    char model[48], gpu[24], config[96], kind[8];
    int expressed;
    int fsdp;        /* shards with FSDP: also summarised on its own line */
    char why[160];
    double published, predicted, err;
} result;

static const char *str_or(const ar_json *o, const char *key, const char *dflt)
{
    const ar_json *v = ar_json_get(o, key);
    return v && v->type == AR_JSON_STRING ? v->string : dflt;
}

/* A number member, or dflt when absent or null. */
static double num_or(const ar_json *o, const char *key, double dflt)
{
    const ar_json *v = ar_json_get(o, key);
    return v && v->type == AR_JSON_NUMBER ? v->number : dflt;
}

static int bool_or(const ar_json *o, const char *key, int dflt)
{
    const ar_json *v = ar_json_get(o, key);
    return v && v->type == AR_JSON_BOOL ? v->boolean : dflt;
}

/* The row's value of key, else the supplement's, else dflt. */
static double fact(const ar_json *row, const ar_json *arch, const ar_json *sup, const char *key, double dflt)
{
    double v = num_or(arch ? arch : row, key, NAN);
    if (!isnan(v)) return v;
    v = sup ? num_or(sup, key, NAN) : NAN;
    return isnan(v) ? dflt : v;
}

/* The catalog name and GPUs per NVLink domain of a row's GPU. */
static const char *gpu_of(const char *g, int *domain)
{
    *domain = 8;
    if (!strncmp(g, "GB200", 5)) { *domain = 72; return "gb200"; }
    if (!strncmp(g, "GB300", 5)) { *domain = 72; return "gb300"; }
    if (!strncmp(g, "B200", 4)) return "b200";
    if (!strncmp(g, "B300", 4)) return "b300";
    if (!strncmp(g, "H200", 4)) return "h200";
    if (!strncmp(g, "H100", 4)) return "h100";
    if (!strncmp(g, "A100", 4)) return "a100-80"; /* DGX A100 / Selene: the 80 GB part */
    return NULL;
}

/* Model FLOPs per token as the row's source counts them, to turn a
 * published TFLOP/s figure into tokens/s.  Megatron's formula (training.py
 * num_floating_point_operations): 12 l h^2 [(1 + kv/heads + s/h) + ffn/h x
 * (1.5 if gated) + V / (2 l h)]; the 2021 paper (arXiv:2104.04473, eq. 3)
 * also counts the recomputed forward: 96 l h^2 (1 + s/(6h) + V/(16 l h)). */
static double source_flops_per_token(int paper2021, double l, double h, double heads, double kv, double ffn,
                                     int gated, double V, double s)
{
    if (paper2021) return 96.0 * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
    return 12.0 * l * h * h * ((1.0 + kv / heads + s / h) + ffn / h * (gated ? 1.5 : 1.0) + V / (2.0 * l * h));
}

static double percentile(double *v, int n, double q)
{
    double pos;
    int i;
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    pos = q * (n - 1);
    i = (int)floor(pos);
    if (i + 1 >= n) return v[n - 1];
    return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

static int wanted(const char *rows, long id)
{
    char buf[512], *tok, *save = NULL;
    if (!rows) return 1;
    snprintf(buf, sizeof buf, "%s", rows);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (atol(tok) == id) return 1;
    return 0;
}

static void print_parts(const arachne_plan *p)
{
    int s;
    const ar_template *t = &p->t[0];
    printf("      M %d, pipeline %.4f s, iteration %.4f s, bubble %.3f\n", t->micro_batches, t->pipeline_s,
           p->iteration_s, p->bubble);
    for (s = 0; s < t->depth; s++) {
        const ar_stage *S = &t->stages[s];
        printf("      stage %2d blocks %3d-%-3d compute %.4f tp %.4f ep %.4f p2p %.4f sync %.4f mem %.1f GB\n", s,
               S->first, S->end, S->compute_s, S->tp_comm_s, S->ep_comm_s, S->p2p_s, S->sync_s, S->mem_bytes / 1e9);
    }
}

/* How the row's kernels run.  The 2021 Megatron-LM runs predate
 * FlashAttention and sequence parallelism (both 2022): eager attention,
 * norms and dropout replicated over the TP group.  PyTorch runs without
 * torch.compile (the row's notes say "torch.compile=off") run their
 * element-wise code eagerly. */
static void gen_options(ar_gen_opts *o, int y2021, int eager, int op_sac)
{
    ar_gen_default_opts(o);
    if (y2021) {
        o->eager_attention = 0;
        o->sequence_parallel = 0;
    }
    o->eager_elementwise = eager;
    o->recompute_elementwise = op_sac;
}

/* The generated profile for the row. */
static int gen_profile(arachne_profile **out, const arachne_model *m, const arachne_cluster *c, int seq, int y2021,
                       int eager, int op_sac)
{
    ar_gen_opts o;
    int st;
    if (!y2021 && !eager && !op_sac) return arachne_profile_generate(out, m, c, seq);
    if ((st = ar_profile_new(out, m->name, seq))) return st;
    gen_options(&o, y2021, eager, op_sac);
    if ((st = ar_profile_gen_type_opts(*out, m, &c->types[0], c->type_max_node[0], &o))) {
        arachne_profile_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* The generator covers micro-batches 1, 2, 4, ..., 32; a row that runs
 * another size (torchtitan's local batch of 12) gets its entries generated
 * for the row's TP degree. */
static int cover_mbs(arachne_profile *prof, const arachne_model *m, const arachne_cluster *c, int tp, int mbs,
                     int y2021, int eager, int op_sac)
{
    ar_gen_opts o;
    int kind, st;
    if ((mbs & (mbs - 1)) == 0 && mbs <= 32) return ARACHNE_OK;
    gen_options(&o, y2021, eager, op_sac);
    for (kind = 0; kind < AR_LAYER_KINDS; kind++) {
        ar_profile_entry e;
        if (ar_kind_is_block(kind) && ar_model_kind_count(m, kind) == 0) continue;
        if ((st = ar_profile_gen_entry(m, &c->types[0], kind, tp, mbs, prof->seq_len, NULL, &o, &e)) ||
            (st = ar_profile_add(prof, e.gpu, e.kind, e.tp, e.mbs, e.fwd_s, e.bwd_s, e.tp_comm_s, e.act_bytes)))
            return st;
    }
    return ARACHNE_OK;
}

/* Memory settings of the row's framework that the supplement records:
 * the gradient buffer's bytes per parameter (Megatron's
 * grad_reduce_in_fp32 = False keeps 16-bit gradients) and Megatron's
 * recompute_modules "layernorm" + "moe_act". */
static void framework_memory(arachne_cost_model *cm, const ar_json *sup)
{
    const ar_json *mods = sup ? ar_json_get(sup, "recompute_modules") : NULL;
    double gb = sup ? num_or(sup, "grad_bytes", NAN) : NAN;
    int i, norm = 0, act = 0;
    if (!isnan(gb)) arachne_cost_model_set(cm, ARACHNE_OPT_GRAD_BYTES, gb);
    if (mods && mods->type == AR_JSON_ARRAY)
        for (i = 0; i < (int)mods->count; i++)
            if (mods->items[i]->type == AR_JSON_STRING) {
                norm |= !strcmp(mods->items[i]->string, "layernorm");
                act |= !strcmp(mods->items[i]->string, "moe_act");
            }
    if (norm && act) arachne_cost_model_set(cm, ARACHNE_OPT_RECOMPUTE_NORM_ACT, 1);
}

/* Meta's Grand Teton H100 (torchtitan's benchmarks): 96 GB of HBM2e at
 * 2.4 TB/s, run at a 500 W power limit instead of the SXM part's 700 W.
 * The torchtitan page says its peak lies between the SXM's (989 TFLOP/s)
 * and the NVL's (835 TFLOP/s) without knowing it; the bench takes the
 * midpoint, 912 TFLOP/s (docs/cost-model.md, "Fidelity"). */
static int grand_teton(arachne_cluster *c, const char *cat, const char *gname)
{
    int st = ARACHNE_OK;
    if (strstr(gname, "96GB HBM2e"))
        if ((st = arachne_cluster_set_gpu_field(c, cat, ARACHNE_GPU_MEMORY_BYTES, 96.0 * 1073741824.0)) ||
            (st = arachne_cluster_set_gpu_field(c, cat, ARACHNE_GPU_HBM_BYTES_PER_S, 2.4e12)))
            return st;
    if (strstr(gname, "500W")) st = arachne_cluster_set_gpu_field(c, cat, ARACHNE_GPU_FLOPS, 0.5 * (989e12 + 835e12));
    return st;
}

/* The model's "hybrid" member (with its leading comma; the caller may
 * append more members) from a supplement's
 * "hybrid" object -- a hybrid Mamba / attention / MoE stack's layer pattern
 * and Mamba-2 sizes, which no row carries -- or "" when there is none. */
static void hybrid_json(const ar_json *sup, char *out, size_t size)
{
    static const char *const keys[] = { "mamba_heads", "mamba_head_dim", "mamba_state", "mamba_groups",
                                        "mamba_conv", "mamba_chunk" };
    const ar_json *hy = sup ? ar_json_get(sup, "hybrid") : NULL;
    const char *pat = hy ? str_or(hy, "pattern", NULL) : NULL;
    size_t k, i;
    out[0] = '\0';
    if (!pat || strlen(pat) + 64 > size) return;
    for (i = 0; pat[i]; i++)
        if (!strchr("M*-E", pat[i])) return; /* the model check names nothing else: leave it out */
    k = (size_t)snprintf(out, size, ",\"hybrid\":{\"pattern\":\"%s\"", pat);
    for (i = 0; i < AR_COUNT(keys) && k < size; i++) {
        double v = num_or(hy, keys[i], NAN);
        if (!isnan(v)) k += (size_t)snprintf(out + k, size - k, ",\"%s\":%g", keys[i], v);
    }
    if (k + 2 < size) snprintf(out + k, size - k, "}");
    else out[0] = '\0';
}

/* Prices one row; fills r. */
static void price_row(const ar_json *row, const ar_json *sup, int parts, result *r)
{
    const ar_json *arch = ar_json_get(row, "architecture");
    const char *gname = str_or(row, "gpu", "?"), *cat = NULL, *release = str_or(row, "release", "");
    char mjson[2560], hybrid[1536], cspec[64], spec[96];
    double tp, pp, cp, vp, fsdp, ep, etp, mbs, n, gbs, seq, l, h, heads, kv, ffn, V, experts, topk, moe_ffn, shared;
    double pub_tok, pub_tfl, hd;
    int domain = 8, gated, moe, paper2021, eager = 0, op_sac, st, nodes, i;
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *prof = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *plan = NULL;
    const ar_json *notes = ar_json_get(row, "notes");

    memset(r, 0, sizeof *r);
    r->id = (long)num_or(row, "id", -1);
    snprintf(r->model, sizeof r->model, "%s", str_or(row, "model", "?"));
    snprintf(r->gpu, sizeof r->gpu, "%.23s", gname);
    moe = !strcmp(str_or(row, "model_type", "dense"), "moe");
    snprintf(r->kind, sizeof r->kind, "%s", moe ? "moe" : "dense");
    paper2021 = strstr(release, "April 2021") != NULL;
    /* torchtitan's selective checkpointing is per-op (its Llama 3 configs
     * set selective_ac_option = "op"): it saves the outputs of every other
     * matmul, attention and reduce-scatter and recomputes everything else */
    op_sac = strstr(str_or(row, "framework", ""), "torchtitan") &&
             !strncmp(str_or(sup, "recompute", str_or(row, "recompute", "selective")), "selective", 9);
    if (notes && notes->type == AR_JSON_ARRAY)
        for (i = 0; i < (int)notes->count; i++)
            if (notes->items[i]->type == AR_JSON_STRING && strstr(notes->items[i]->string, "torch.compile=off"))
                eager = 1;
    tp = fact(row, NULL, sup, "tp", NAN);
    pp = fact(row, NULL, sup, "pp", NAN);
    cp = num_or(row, "cp", 1);
    vp = num_or(row, "vp", 1);
    fsdp = num_or(row, "fsdp", 0);
    ep = fact(row, NULL, sup, "ep", 1);
    etp = num_or(row, "etp", NAN);
    /* where the source does not give the micro-batch: torchtitan without a
     * pipeline runs the whole local batch in one step (no accumulation);
     * Megatron's examples use 1.  A supplement "mbs" corrects a row whose
     * GBS is not DP x MBS x GA (its "why_mbs" says where the value is from) */
    mbs = sup ? num_or(sup, "mbs", num_or(row, "mbs", 0)) : num_or(row, "mbs", 0);
    if (!(mbs > 0)) {
        double dp = isnan(tp) || isnan(pp) ? 0.0 : num_or(row, "num_gpus", 0) / (tp * pp);
        mbs = strstr(str_or(row, "framework", ""), "torchtitan") && pp == 1 && dp > 0 ? num_or(row, "gbs", 0) / dp : 1;
    }
    n = num_or(row, "num_gpus", 0);
    gbs = num_or(row, "gbs", 0);
    seq = num_or(row, "seq_len", 0);
    pub_tok = num_or(row, "tokens_per_sec_per_gpu", NAN);
    pub_tfl = num_or(row, "model_tflops_per_gpu", NAN);
    snprintf(r->config, sizeof r->config, "tp%g pp%g%s%s dp%g mbs%g%s", tp, pp, vp > 1 ? " vp" : "",
             cp > 1 ? " cp" : "", isnan(tp) || isnan(pp) ? 0.0 : n / (tp * pp * cp), mbs, moe ? " ep" : "");
    if (moe) {
        size_t k = strlen(r->config);
        snprintf(r->config + k, sizeof r->config - k, "%g", ep);
    }
    r->why[0] = '\0';
    r->fsdp = fsdp > 1;
    if (isnan(tp) || isnan(pp)) snprintf(r->why, sizeof r->why, "TP/PP not published");
    else if (pp > AR_MAX_DEPTH) snprintf(r->why, sizeof r->why, "pipeline of %g stages (> %d)", pp, AR_MAX_DEPTH);
    else if (!(cat = gpu_of(gname, &domain))) snprintf(r->why, sizeof r->why, "GPU '%s' not in the catalog", gname);
    else if (isnan(pub_tok) && isnan(pub_tfl)) snprintf(r->why, sizeof r->why, "no throughput published");
    if (r->why[0]) return;

    l = fact(row, arch, sup, "layers", 0);
    h = fact(row, arch, sup, "hidden", 0);
    heads = fact(row, arch, sup, "heads", 0);
    kv = fact(row, arch, sup, "kv_heads", heads);
    ffn = fact(row, arch, sup, "ffn", 4 * h);
    V = fact(row, arch, sup, "vocab", 0);
    hd = fact(row, arch, sup, "head_dim", heads > 0 ? h / heads : 0);
    experts = moe ? fact(row, arch, sup, "experts", 0) : 0;
    topk = moe ? fact(row, arch, sup, "topk", 1) : 0;
    moe_ffn = moe ? fact(row, arch, sup, "moe_ffn", ffn) : 0;
    shared = moe ? fact(row, arch, sup, "shared_experts", 0) : 0;
    gated = sup ? bool_or(sup, "gated_mlp", 1) : 1;
    if (!(l > 0 && h > 0 && heads > 0 && V > 0)) {
        /* a supplement may say why no architecture could be given */
        snprintf(r->why, sizeof r->why, "%.150s", str_or(sup, "why_not_priced", "architecture incomplete"));
        return;
    }
    hybrid_json(sup, hybrid, sizeof hybrid);
    if (moe && fact(row, arch, sup, "expert_latent", 0) > 0) {
        size_t k = strlen(hybrid);
        snprintf(hybrid + k, sizeof hybrid - k, ",\"expert_latent\":%g", fact(row, arch, sup, "expert_latent", 0));
    }
    snprintf(mjson, sizeof mjson,
             "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"row%ld\",\"blocks\":%g,\"hidden\":%g,"
             "\"heads\":%g,\"kv_heads\":%g,\"head_dim\":%g,\"ffn\":%g,\"vocab\":%g,\"experts\":%g,\"top_k\":%g,"
             "\"shared_experts\":%g,\"expert_ffn\":%g,\"dense_prefix\":0,\"qk_norm\":false,\"gated_mlp\":%s,"
             "\"tied_embeddings\":false%s}",
             r->id, l, h, heads, kv, hd, moe ? moe_ffn : ffn, V, experts, topk, shared, moe ? moe_ffn : 0.0,
             gated ? "true" : "false", hybrid);
    nodes = (int)ceil(n / domain);
    snprintf(cspec, sizeof cspec, "%s:%dx%d", cat, nodes, domain);
    /* context parallelism: each replica's stages run on tp x cp GPUs */
    snprintf(spec, sizeof spec, "tp=%g,pp=%g,cp=%g,dp=%g,mbs=%g", tp, pp, cp, n / (tp * pp * cp), mbs);
    if (fsdp > 1) {
        size_t k = strlen(spec);
        snprintf(spec + k, sizeof spec - k, ",fsdp=%g", fsdp);
    }
    if (vp > 1) {
        size_t k = strlen(spec);
        snprintf(spec + k, sizeof spec - k, ",vp=%g", vp);
    }
    if (moe) {
        size_t k = strlen(spec);
        snprintf(spec + k, sizeof spec - k, ",ep=%g", ep);
        if (!isnan(etp)) {
            k = strlen(spec);
            snprintf(spec + k, sizeof spec - k, ",etp=%g", etp);
        }
    }
    if ((st = arachne_model_from_json(&m, mjson, strlen(mjson))) ||
        (st = arachne_cluster_parse(&c, cspec)) ||
        (st = grand_teton(c, cat, gname)) ||
        (st = gen_profile(&prof, m, c, (int)seq, paper2021, eager, op_sac)) ||
        (st = cover_mbs(prof, m, c, (int)tp, (int)mbs, paper2021, eager, op_sac)) ||
        (st = arachne_cost_model_create(&cm, m, c, prof)) ||
        (st = arachne_cost_model_set(cm, ARACHNE_OPT_GLOBAL_BATCH, gbs)) ||
        (st = arachne_cost_model_set(cm, ARACHNE_OPT_HEADROOM, 0.0))) {
        snprintf(r->why, sizeof r->why, "setup: %.140s", arachne_last_error());
        goto done;
    }
    {
        const char *rc = str_or(sup, "recompute", str_or(row, "recompute", "selective"));
        int mode = !strncmp(rc, "full", 4) ? ARACHNE_RECOMPUTE_FULL : ARACHNE_RECOMPUTE_SELECTIVE;
        arachne_cost_model_set(cm, ARACHNE_OPT_RECOMPUTE, mode);
        if (op_sac) arachne_cost_model_set(cm, ARACHNE_OPT_RECOMPUTE_ALT_MM, 1);
        arachne_cost_model_set(cm, ARACHNE_OPT_DIST_OPTIMIZER, num_or(sup, "dist_optimizer", 1));
        arachne_cost_model_set(cm, ARACHNE_OPT_OVERLAP_GRAD_REDUCE, num_or(sup, "overlap_grad_reduce", 1));
        arachne_cost_model_set(cm, ARACHNE_OPT_OVERLAP_PARAM_GATHER, num_or(sup, "overlap_grad_reduce", 1));
        framework_memory(cm, sup);
    }
    if (notes && notes->type == AR_JSON_ARRAY)
        for (i = 0; i < (int)notes->count; i++)
            if (notes->items[i]->type == AR_JSON_STRING) {
                if (strstr(notes->items[i]->string, "--tp-comm-overlap"))
                    arachne_cost_model_set(cm, ARACHNE_OPT_TP_COMM_OVERLAP, 1);
                /* DeepEP's normal kernels send a token once per node (docs/cost-model.md) */
                if (strstr(notes->items[i]->string, "DeepEP"))
                    arachne_cost_model_set(cm, ARACHNE_OPT_EP_HIERARCHICAL, 1);
            }
    if ((st = arachne_plan_from_parallel(&plan, cm, spec))) {
        snprintf(r->why, sizeof r->why, "%.150s", arachne_last_error());
        goto done;
    }
    if (isnan(pub_tok))
        pub_tok = pub_tfl * 1e12 / source_flops_per_token(paper2021, l, h, heads, kv, moe ? moe_ffn : ffn, gated, V, seq);
    r->published = pub_tok;
    r->predicted = plan->tokens_per_s / n;
    r->err = r->predicted / r->published - 1.0;
    r->expressed = 1;
    if (parts) print_parts(plan);
done:
    for (i = 0; r->why[i]; i++)
        if (r->why[i] == '"' || r->why[i] == '\\') r->why[i] = '\'';
    arachne_plan_destroy(plan);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(prof);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

typedef struct stats { int n; double med, p90, worst; } stats;

/* Statistics of the expressed rows of one kind / GPU prefix (NULL: any);
 * fsdp_only: only the rows that shard with FSDP. */
static stats summarise(const result *rs, int n, const char *kind, const char *gpu, int fsdp_only)
{
    double v[MAX_ROWS];
    stats s;
    int i, k = 0;
    for (i = 0; i < n; i++) {
        if (!rs[i].expressed || (fsdp_only && !rs[i].fsdp)) continue;
        if (kind && strcmp(rs[i].kind, kind)) continue;
        if (gpu && strncmp(rs[i].gpu, gpu, strlen(gpu))) continue;
        v[k++] = fabs(rs[i].err);
    }
    s.n = k;
    s.worst = k ? percentile(v, k, 1.0) : NAN;
    s.med = percentile(v, k, 0.5);
    s.p90 = percentile(v, k, 0.9);
    return s;
}

static void print_stats(const char *label, stats s)
{
    if (s.n == 0) return;
    printf("  %-10s %3d rows  median |err| %5.1f %%  p90 %5.1f %%  worst %5.1f %%\n", label, s.n, 100 * s.med,
           100 * s.p90, 100 * s.worst);
}

int main(int argc, char **argv)
{
    const char *path = "tests/data/published-runs.json", *rows = NULL;
    int check = 0, parts = 0, i, n = 0, expressed = 0, ok = 1;
    ar_json *root = NULL;
    const ar_json *arr = NULL, *supp;
    static result rs[MAX_ROWS];
    stats all, dense, moe, fs;
    static const char *const gpus[] = { "A100", "H100", "B200", "GB200" };
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = argv[++i];
        else if (!strcmp(argv[i], "--check")) check = 1;
        else if (!strcmp(argv[i], "--parts")) parts = 1;
        else {
            fprintf(stderr, "usage: bench_fidelity [--data FILE] [--check] [--rows ID,...] [--parts]\n");
            return 2;
        }
    }
    if (ar_json_parse_file(&root, path) || ar_json_arr(root, "rows", 1, &arr)) {
        fprintf(stderr, "bench_fidelity: %s\n", arachne_last_error());
        ar_json_free(root);
        return 1;
    }
    supp = ar_json_get(root, "supplement");
    printf("%-5s %-22s %-10s %-5s %-26s %10s %10s %8s\n", "id", "model", "gpu", "gpus", "config", "published",
           "predicted", "error");
    for (i = 0; i < (int)arr->count && n < MAX_ROWS; i++) {
        const ar_json *row = arr->items[i];
        char key[24];
        result *r = &rs[n];
        snprintf(key, sizeof key, "%ld", (long)num_or(row, "id", -1));
        if (!wanted(rows, (long)num_or(row, "id", -1))) continue;
        price_row(row, supp ? ar_json_get(supp, key) : NULL, parts, r);
        n++;
        if (r->expressed) {
            expressed++;
            printf("%-5ld %-22.22s %-10.10s %-5g %-26.26s %10.1f %10.1f %+7.1f%%\n", r->id, r->model, r->gpu,
                   num_or(row, "num_gpus", 0), r->config, r->published, r->predicted, 100 * r->err);
        } else {
            printf("%-5ld %-22.22s %-10.10s %-5g not expressed: %s\n", r->id, r->model, r->gpu,
                   num_or(row, "num_gpus", 0), r->why);
        }
    }
    all = summarise(rs, n, NULL, NULL, 0);
    dense = summarise(rs, n, "dense", NULL, 0);
    moe = summarise(rs, n, "moe", NULL, 0);
    fs = summarise(rs, n, NULL, NULL, 1);
    printf("\nexpressed %d of %d rows (%d with FSDP)\n", expressed, n, fs.n);
    print_stats("all", all);
    print_stats("dense", dense);
    print_stats("moe", moe);
    for (i = 0; i < (int)(sizeof gpus / sizeof gpus[0]); i++) print_stats(gpus[i], summarise(rs, n, NULL, gpus[i], 0));
    print_stats("fsdp", fs);
    for (i = 0; i < n; i++) {
        const result *r = &rs[i];
        if (r->expressed)
            printf("{\"bench\":\"fidelity\",\"id\":%ld,\"kind\":\"%s\",\"gpu\":\"%s\",\"published_tok_s_gpu\":%.2f,"
                   "\"predicted_tok_s_gpu\":%.2f,\"error\":%.4f,\"fsdp\":%s}\n",
                   r->id, r->kind, r->gpu, r->published, r->predicted, r->err, r->fsdp ? "true" : "false");
        else
            printf("{\"bench\":\"fidelity\",\"id\":%ld,\"kind\":\"%s\",\"gpu\":\"%s\",\"expressed\":false,"
                   "\"reason\":\"%s\"}\n",
                   r->id, r->kind, r->gpu, r->why);
    }
    printf("{\"bench\":\"fidelity_summary\",\"expressed\":%d,\"rows\":%d,\"median_abs_error\":%.4f,"
           "\"p90_abs_error\":%.4f,\"worst_abs_error\":%.4f,\"dense_median\":%.4f,\"moe_median\":%.4f,"
           "\"fsdp_rows\":%d,\"fsdp_median\":%.4f}\n",
           expressed, n, all.med, all.p90, all.worst, dense.med, moe.med, fs.n, fs.med);
    ar_json_free(root);
    if (check) {
        if (!(all.med <= 0.10 && all.p90 <= 0.20 && all.worst <= 0.35)) ok = 0;
        if (dense.n > 0 && !(dense.med <= 0.10)) ok = 0;
        if (moe.n > 0 && !(moe.med <= 0.10)) ok = 0;
        printf("check: %s\n", ok ? "the calibration targets hold" : "a calibration target is missed");
        return ok ? 0 : 1;
    }
    return 0;
}
