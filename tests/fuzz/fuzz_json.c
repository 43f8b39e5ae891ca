/* fuzz_json.c -- ar_json_parse on arbitrary bytes.
 * Properties: never crashes or leaks; a failure returns ARACHNE_E_PARSE with
 * a "<source>:<line>:<col>: " message; a document that parses is written back
 * with the library's writer helpers, and the text read back is identical
 * (types, keys, strings, numbers bit-exact). */
#include "fuzz_common.h"
#include "json.h"

static void write_tree(ar_buf *b, const ar_json *v)
{
    size_t i;
    switch (v->type) {
    case AR_JSON_NULL: ar_buf_puts(b, "null"); break;
    case AR_JSON_BOOL: ar_buf_puts(b, v->boolean ? "true" : "false"); break;
    case AR_JSON_NUMBER: ar_json_put_number(b, v->number); break;
    case AR_JSON_STRING: ar_json_put_string(b, v->string); break;
    case AR_JSON_ARRAY:
    case AR_JSON_OBJECT:
        ar_buf_puts(b, v->type == AR_JSON_ARRAY ? "[" : "{");
        for (i = 0; i < v->count; i++) {
            if (i) ar_buf_puts(b, ",");
            if (v->type == AR_JSON_OBJECT) {
                ar_json_put_string(b, v->keys[i]);
                ar_buf_puts(b, ":");
            }
            write_tree(b, v->items[i]);
        }
        ar_buf_puts(b, v->type == AR_JSON_ARRAY ? "]" : "}");
        break;
    }
}

static int same_tree(const ar_json *a, const ar_json *b)
{
    size_t i;
    if (a->type != b->type) return 0;
    switch (a->type) {
    case AR_JSON_NULL: return 1;
    case AR_JSON_BOOL: return a->boolean == b->boolean;
    case AR_JSON_NUMBER: return memcmp(&a->number, &b->number, sizeof a->number) == 0 ||
                                (a->number == 0 && b->number == 0);
    case AR_JSON_STRING: return strcmp(a->string, b->string) == 0;
    case AR_JSON_ARRAY:
    case AR_JSON_OBJECT:
        if (a->count != b->count) return 0;
        for (i = 0; i < a->count; i++) {
            if (a->type == AR_JSON_OBJECT && strcmp(a->keys[i], b->keys[i]) != 0) return 0;
            if (!same_tree(a->items[i], b->items[i])) return 0;
        }
        return 1;
    }
    return 0;
}

/* Exercise the typed getters on the top level the way loaders do. */
static void poke_getters(const ar_json *root)
{
    static const char *const known[] = { "format", "version", "name", NULL };
    double d = 0;
    long l = 0;
    const char *s = NULL;
    int bo = 0;
    const ar_json *sub = NULL;
    size_t i;
    (void)ar_json_num(root, "version", 0, &d);
    (void)ar_json_int(root, "version", 0, -5, 1000000, &l);
    (void)ar_json_str(root, "name", 0, &s);
    (void)ar_json_bool(root, "tied_embeddings", 0, &bo);
    (void)ar_json_arr(root, "nodes", 0, &sub);
    (void)ar_json_obj(root, "mla", 0, &sub);
    (void)ar_json_only_keys(root, known);
    if (root->type == AR_JSON_OBJECT)
        for (i = 0; i < root->count && i < 8; i++) FUZZ_CHECK(ar_json_get(root, root->keys[i]) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    ar_json *root = NULL, *again = NULL;
    ar_buf b;
    int st;
    if (!text) return 0;
    arachne_clear_error();
    st = ar_json_parse(&root, text, size, "fuzz.json");
    if (st != ARACHNE_OK) {
        FUZZ_CHECK(root == NULL);
        FUZZ_CHECK(st == ARACHNE_E_PARSE || st == ARACHNE_E_NO_MEMORY);
        FUZZ_CHECK(strncmp(arachne_last_error(), "fuzz.json:", 10) == 0);
        free(text);
        return 0;
    }
    FUZZ_CHECK(root != NULL);
    poke_getters(root);
    ar_buf_init(&b);
    write_tree(&b, root);
    FUZZ_CHECK(ar_buf_status(&b) == ARACHNE_OK);
    st = ar_json_parse(&again, b.data, b.len, "rewritten");
    FUZZ_CHECK(st == ARACHNE_OK);
    FUZZ_CHECK(same_tree(root, again));
    ar_json_free(again);
    ar_buf_free(&b);
    ar_json_free(root);
    free(text);
    return 0;
}
