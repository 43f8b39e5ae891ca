/* test_messages.c -- error messages that tell the user what to fix: NULL
 * arguments are named, a near-miss preset name gets a suggestion, a profile
 * without the cluster's GPU type names the type; and the SVG's wording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TEST(null_argument_is_named)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    const char *name = NULL;
    double v = 0;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_STATUS(arachne_model_name(m, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "arachne_model_name: argument 'out' is NULL");
    ASSERT_STATUS(arachne_model_name(NULL, &name), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "argument 'm' is NULL");
    ASSERT_STATUS(arachne_model_preset(NULL, "llama3-8b"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "arachne_model_preset: argument 'out' is NULL");
    {
        arachne_model *m2 = NULL;
        ASSERT_STATUS(arachne_model_preset(&m2, NULL), ARACHNE_E_INVALID_ARGUMENT);
        ASSERT_CONTAINS(arachne_last_error(), "argument 'name' is NULL");
    }
    ASSERT_STATUS(arachne_cluster_parse(NULL, "a100-40:1x4"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "is NULL");
    ASSERT_OK(arachne_cluster_parse(&c, "a100-40:1x4"));
    ASSERT_STATUS(arachne_cost_model_create(NULL, m, c, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "arachne_cost_model_create: argument 'out' is NULL");
    ASSERT_STATUS(arachne_model_get(m, ARACHNE_MODEL_BLOCKS, NULL), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "argument 'out' is NULL");
    ASSERT_OK(arachne_model_get(m, ARACHNE_MODEL_BLOCKS, &v));
    ASSERT_EQ((int)v, 32);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

TEST(preset_typo_gets_a_suggestion)
{
    arachne_model *m = NULL;
    ASSERT_STATUS(arachne_model_preset(&m, "llama-3-8b"), ARACHNE_E_NOT_FOUND);
    ASSERT(m == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "did you mean llama3-8b?");
    ASSERT_STATUS(arachne_model_open(&m, "Qwen3-8"), ARACHNE_E_NOT_FOUND);
    ASSERT_CONTAINS(arachne_last_error(), "did you mean qwen3-8b?");
    /* nothing close: no suggestion */
    ASSERT_STATUS(arachne_model_open(&m, "gpt5"), ARACHNE_E_NOT_FOUND);
    ASSERT(strstr(arachne_last_error(), "did you mean") == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "neither a preset nor a readable model file");
}

/* Messages quote names and text from the caller's input; control
 * characters there (a terminal escape in a preset name or a cluster spec)
 * come back as '?', so printing a message never drives a terminal. */
TEST(control_characters_are_not_echoed)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    const char *msg;
    size_t i;
    ASSERT_STATUS(arachne_model_preset(&m, "evil\033[2J\a"), ARACHNE_E_NOT_FOUND);
    msg = arachne_last_error();
    ASSERT_CONTAINS(msg, "evil?[2J?");
    for (i = 0; msg[i]; i++) ASSERT((unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f);
    ASSERT(arachne_cluster_parse(&c, "h100\n:1x8\177") != ARACHNE_OK);
    msg = arachne_last_error();
    ASSERT(msg[0] != '\0');
    for (i = 0; msg[i]; i++) ASSERT((unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f);
    ASSERT(m == NULL && c == NULL);
}

TEST(profile_without_the_gpu_type_names_it)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL, *other = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *plan = NULL;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_OK(arachne_cluster_parse(&c, "a100-40:1x4"));
    ASSERT_OK(arachne_cluster_parse(&other, "h100:1x4"));
    ASSERT_OK(arachne_profile_generate(&p, m, other, 4096)); /* H100 entries only */
    ASSERT_OK(arachne_cost_model_create(&cm, m, c, p));
    ASSERT_STATUS(arachne_search_random(&plan, cm, 20, 1, 0.0), ARACHNE_E_INFEASIBLE);
    ASSERT_CONTAINS(arachne_last_error(), "the profile has no entries for GPU type A100-40");
    arachne_plan_destroy(plan);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(other);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

/* x of every node label (8 px text "A6000") in document order. */
static int label_xs(const char *svg, double *xs, int cap)
{
    int n = 0;
    const char *s = svg;
    while (n < cap && (s = strstr(s, "font-size=\"8\" text-anchor=\"start\">A6000<")) != NULL) {
        const char *x = s;
        while (x > svg && strncmp(x, "<text x=\"", 9) != 0) x--;
        xs[n++] = atof(x + 9);
        s++;
    }
    return n;
}

TEST(svg_wording_and_node_labels)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    arachne_profile *p = NULL;
    arachne_cost_model *cm = NULL;
    arachne_plan *plan = NULL;
    char *svg;
    size_t need = 0;
    double xs[16];
    int n, i;
    ASSERT_OK(arachne_model_preset(&m, "llama3-8b"));
    ASSERT_OK(arachne_cluster_parse(&c, "a6000:6x1"));
    ASSERT_OK(arachne_profile_generate(&p, m, c, 4096));
    ASSERT_OK(arachne_cost_model_create(&cm, m, c, p));
    ASSERT_OK(arachne_search_random(&plan, cm, 30, 1, 0.0));
    ASSERT_STATUS(arachne_plan_to_svg(plan, NULL, 0, &need), ARACHNE_E_BUFFER_TOO_SMALL);
    svg = malloc(need);
    ASSERT(svg != NULL);
    ASSERT_OK(arachne_plan_to_svg(plan, svg, need, NULL));
    /* one pipeline over six 1-GPU nodes: "1 replica", never "1 replicas" */
    ASSERT(strstr(svg, " 1 replicas") == NULL);
    ASSERT_CONTAINS(svg, " x 1 replica,");
    /* the six labels "A6000" (about 27 px at 8 px) do not overlap */
    n = label_xs(svg, xs, 16);
    ASSERT_EQ(n, 6);
    for (i = 1; i < n; i++) ASSERT_GT(xs[i] - xs[i - 1], 4.6 * 5 + 4 - 0.01);
    free(svg);
    arachne_plan_destroy(plan);
    arachne_cost_model_destroy(cm);
    arachne_profile_destroy(p);
    arachne_cluster_destroy(c);
    arachne_model_destroy(m);
}

SUITE(messages, T(null_argument_is_named), T(preset_typo_gets_a_suggestion),
      T(profile_without_the_gpu_type_names_it), T(svg_wording_and_node_labels),
      T(control_characters_are_not_echoed));
