/* plan_svg.c -- a picture of a plan as plain SVG: every node and GPU of the
 * cluster coloured by template and stage (grey when idle), and per template
 * its stages with layer ranges, a stage-time bar and a memory bar. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "plan.h"

#define GPU_PX 11      /* side of one GPU square */
#define GPU_GAP 2
#define NODE_PAD 4
#define GRID_W 560     /* width of the node panel */
#define BAR_W 220      /* longest bar */

/* Colour of (template, stage): hue per template, lightness per stage. */
static void stage_colour(char *out, size_t cap, int t, int s, int depth)
{
    static const int hues[] = { 210, 25, 130, 280, 350, 55, 180, 300 };
    int hue = hues[t % 8];
    double light = depth > 1 ? 35.0 + 40.0 * s / (depth - 1) : 50.0;
    snprintf(out, cap, "hsl(%d,65%%,%.0f%%)", hue, light);
}

/* Width of node n's box: its GPUs, but never narrower than its type label
 * (8 px font, about 4.6 px a character), so that the labels of 1-GPU nodes
 * do not run together; at most GRID_W. */
static double node_width(const arachne_cluster *c, int n)
{
    double w = c->nodes[n].gpus * (GPU_PX + GPU_GAP) + 2 * NODE_PAD;
    double label = 4.6 * (double)strlen(c->types[c->nodes[n].type].name) + 4;
    if (w < label) w = label;
    return w > GRID_W ? GRID_W : w;
}

static void text(ar_buf *b, double x, double y, int size, const char *anchor, const char *s)
{
    const char *p;
    ar_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\">", x, y, size, anchor);
    for (p = s; *p; p++) {
        if (*p == '<') ar_buf_puts(b, "&lt;");
        else if (*p == '>') ar_buf_puts(b, "&gt;");
        else if (*p == '&') ar_buf_puts(b, "&amp;");
        else ar_buf_put(b, p, 1);
    }
    ar_buf_puts(b, "</text>\n");
}

static int plan_write_svg(const arachne_plan *p, ar_buf *b)
{
    arachne_cluster *c = NULL;
    int st, *owner = NULL, *first_gpu = NULL, n, g, t, s, r, total = 0;
    double x, y, row_h, max_stage = 0, panel_h, height, width = GRID_W + 40 + 520;
    char line[256], col[48];
    if (!p || !p->cluster_spec) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "plan svg: plan has no cluster");
    /* The cluster the plan was priced on, with its GPU figures: user-defined
     * types are not in the catalog the compact string is parsed against. */
    if (p->in.cluster) st = arachne_cluster_from_json(&c, p->in.cluster, strlen(p->in.cluster));
    else st = arachne_cluster_parse(&c, p->cluster_spec);
    if (st) return st;
    if (c->nnodes > 0 && p->nranks > 0 && c->total_gpus < p->gpus_used) {
        arachne_cluster_destroy(c);
        return ar_error(ARACHNE_E_INVALID_PLAN, "plan svg: the plan uses %d GPUs, its cluster has %d", p->gpus_used,
                        c->total_gpus);
    }
    first_gpu = ar_calloc((size_t)c->nnodes + 1, sizeof *first_gpu);
    if (!first_gpu) { arachne_cluster_destroy(c); return ARACHNE_E_NO_MEMORY; }
    for (n = 0; n < c->nnodes; n++) first_gpu[n + 1] = first_gpu[n] + c->nodes[n].gpus;
    total = first_gpu[c->nnodes];
    owner = ar_malloc((size_t)total * sizeof *owner);
    if (!owner) { free(first_gpu); arachne_cluster_destroy(c); return ARACHNE_E_NO_MEMORY; }
    for (g = 0; g < total; g++) owner[g] = -1;
    for (r = 0; r < p->nranks; r++) {
        const ar_rank *rk = &p->ranks[r];
        if (rk->node >= 0 && rk->node < c->nnodes && rk->gpu >= 0 && rk->gpu < c->nodes[rk->node].gpus)
            owner[first_gpu[rk->node] + rk->gpu] = rk->tmpl * AR_MAX_DEPTH + rk->stage;
    }
    /* Node panel layout: nodes flow left to right, wrapping rows. */
    row_h = GPU_PX + 2 * NODE_PAD + 14;
    {
        double cx = 0, rows = 1;
        for (n = 0; n < c->nnodes; n++) {
            double w = node_width(c, n);
            if (cx + w > GRID_W && cx > 0) { rows++; cx = 0; }
            cx += w + 6;
        }
        panel_h = rows * row_h;
    }
    for (t = 0; t < p->ntemplates; t++)
        for (s = 0; s < p->t[t].depth; s++)
            if (p->t[t].stages[s].stage_s > max_stage) max_stage = p->t[t].stages[s].stage_s;
    {
        double right = 0;
        for (t = 0; t < p->ntemplates; t++) right += 36 + 30.0 * p->t[t].depth;
        height = 90 + (panel_h > right ? panel_h : right) + 10;
    }
    ar_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "font-family=\"Helvetica,Arial,sans-serif\">\n", width, height);
    ar_buf_printf(b, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height);
    snprintf(line, sizeof line, "%s on %s", p->model, p->cluster_spec);
    text(b, 20, 28, 16, "start", line);
    snprintf(line, sizeof line, "iteration %.3f s  |  %.0f tokens/s  |  MFU %.1f %%  |  %d of %d GPUs used  |  %s",
             p->iteration_s, p->tokens_per_s, 100.0 * p->mfu, p->gpus_used, p->gpus_total,
             p->method[0] ? p->method : "plan");
    text(b, 20, 50, 12, "start", line);
    text(b, 20, 78, 13, "start", "GPUs by node (colour: template hue, stage lightness; grey: idle)");
    text(b, GRID_W + 60, 64, 10, "start", "bars: green = stage time per micro-batch (fwd+bwd), red = memory per GPU");
    /* Nodes. */
    x = 20;
    y = 90;
    for (n = 0; n < c->nnodes; n++) {
        double w = node_width(c, n);
        int per_row = (int)((GRID_W - 2 * NODE_PAD) / (GPU_PX + GPU_GAP));
        if (x + w > 20 + GRID_W && x > 20) { x = 20; y += row_h; }
        ar_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                         "stroke=\"#888\" rx=\"3\"/>\n", x, y, w, (double)GPU_PX + 2 * NODE_PAD);
        for (g = 0; g < c->nodes[n].gpus && g < per_row; g++) {
            int o = owner[first_gpu[n] + g];
            if (o < 0) snprintf(col, sizeof col, "#ddd");
            else stage_colour(col, sizeof col, o / AR_MAX_DEPTH, o % AR_MAX_DEPTH, p->t[o / AR_MAX_DEPTH].depth);
            ar_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
                          x + NODE_PAD + g * (GPU_PX + GPU_GAP), y + NODE_PAD, GPU_PX, GPU_PX, col);
        }
        snprintf(line, sizeof line, "%s", c->types[c->nodes[n].type].name);
        text(b, x + 2, y + GPU_PX + 2 * NODE_PAD + 10, 8, "start", line);
        x += w + 6;
    }
    /* Templates and stages. */
    x = GRID_W + 60;
    y = 90;
    for (t = 0; t < p->ntemplates; t++) {
        const ar_template *tp = &p->t[t];
        snprintf(line, sizeof line, "template %d: %d stage%s x %d replica%s, micro-batch %d, %d micro-batches%s", t,
                 tp->depth, tp->depth == 1 ? "" : "s", tp->replicas, tp->replicas == 1 ? "" : "s", tp->micro_batch,
                 tp->micro_batches, tp->vp > 1 ? ", interleaved" : "");
        text(b, x, y, 13, "start", line);
        y += 10;
        for (s = 0; s < tp->depth; s++) {
            const ar_stage *sg = &tp->stages[s];
            double tw = max_stage > 0 ? BAR_W * sg->stage_s / max_stage : 0;
            double mem_cap = sg->type >= 0 && sg->type < c->ntypes ? c->types[sg->type].mem_bytes : 0.0;
            double mw = mem_cap > 0 ? 120.0 * AR_MIN(sg->mem_bytes / mem_cap, 1.0) : 0;
            stage_colour(col, sizeof col, t, s, tp->depth);
            ar_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", x, y + 4, col);
            if (tp->cp > 1)
                snprintf(line, sizeof line, "S%d %s x tp%d cp%d  layers [%d,%d)", s,
                         sg->type >= 0 && sg->type < c->ntypes ? c->types[sg->type].name : "?", sg->tp, tp->cp,
                         sg->first, sg->end);
            else
                snprintf(line, sizeof line, "S%d %s x tp%d  layers [%d,%d)", s,
                         sg->type >= 0 && sg->type < c->ntypes ? c->types[sg->type].name : "?", sg->tp, sg->first,
                         sg->end);
            text(b, x + 20, y + 15, 10, "start", line);
            if (tp->vp > 1) {
                /* the stage's model chunks (interleaved 1F1B), under its name */
                size_t k = 0;
                int ch, fi, en;
                line[0] = '\0';
                for (ch = 0; ch < tp->vp && k + 24 < sizeof line; ch++) {
                    ar_vp_chunk_range(tp, s, ch, &fi, &en);
                    k += (size_t)snprintf(line + k, sizeof line - k, "%s[%d,%d)", ch ? " " : "chunks ", fi, en);
                }
                text(b, x + 20, y + 26, 7, "start", line);
            }
            ar_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"6\" fill=\"#4a7\"/>\n", x + 190,
                          y + 6, tw);
            snprintf(line, sizeof line, "%.1f ms", 1e3 * sg->stage_s);
            text(b, x + 194 + tw, y + 12, 8, "start", line);
            ar_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"120\" height=\"6\" fill=\"none\" stroke=\"#999\"/>\n"
                             "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"6\" fill=\"#c64\"/>\n",
                          x + 190, y + 16, x + 190, y + 16, mw);
            snprintf(line, sizeof line, "%.1f / %.0f GB", sg->mem_bytes / 1e9, mem_cap / 1e9);
            text(b, x + 314, y + 22, 8, "start", line);
            y += 30;
        }
        y += 26;
    }
    ar_buf_puts(b, "</svg>\n");
    free(owner);
    free(first_gpu);
    arachne_cluster_destroy(c);
    return ar_buf_status(b);
}

int arachne_plan_to_svg(const arachne_plan *p, char *buf, size_t cap, size_t *needed)
{
    ar_buf b;
    int st;
    if (!p) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "arachne_plan_to_svg: plan is NULL");
    ar_buf_init(&b);
    st = plan_write_svg(p, &b);
    if (!st) st = ar_copy_out(buf, cap, needed, b.data, b.len);
    ar_buf_free(&b);
    return st;
}

int arachne_plan_save_svg(const arachne_plan *p, const char *path)
{
    ar_buf b;
    int st;
    if (!p || !path) return AR_NULL_ARG("arachne_plan_save_svg", p, path);
    ar_buf_init(&b);
    st = plan_write_svg(p, &b);
    if (!st) st = ar_write_file_atomic(path, b.data, b.len);
    ar_buf_free(&b);
    return st;
}
