/* test_json.c -- the strict JSON reader and the writer helpers. */
#define _POSIX_C_SOURCE 200809L
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json.h"

/* Parses text (NUL-terminated) expecting failure; checks the status and that
 * the message starts with "t.json:<line>:<col>: " and contains `what`. */
static int bad(const char *text, size_t len, int line, int col, const char *what)
{
    ar_json *v = (ar_json *)1;
    char prefix[64];
    int st;
    arachne_clear_error();
    st = ar_json_parse(&v, text, len, "t.json");
    if (st != ARACHNE_E_PARSE) {
        th_fail(__FILE__, __LINE__, "input <%.80s> parsed with status %d, want ARACHNE_E_PARSE", text, st);
        ar_json_free(v);
        return 0;
    }
    if (v != NULL) {
        th_fail(__FILE__, __LINE__, "*out not NULL on failure");
        return 0;
    }
    snprintf(prefix, sizeof prefix, "t.json:%d:%d: ", line, col);
    if (strncmp(arachne_last_error(), prefix, strlen(prefix)) != 0 || !strstr(arachne_last_error(), what)) {
        th_fail(__FILE__, __LINE__, "input <%.80s>: message \"%s\", want prefix \"%s\" and \"%s\"", text,
                arachne_last_error(), prefix, what);
        return 0;
    }
    return 1;
}
#define BAD(text, line, col, what) do { if (!bad(text, strlen(text), line, col, what)) return; } while (0)
#define BADN(text, len, line, col, what) do { if (!bad(text, len, line, col, what)) return; } while (0)

static ar_json *good(const char *text)
{
    ar_json *v = NULL;
    if (ar_json_parse(&v, text, strlen(text), "t.json") != ARACHNE_OK) {
        th_fail(__FILE__, __LINE__, "input <%.80s> failed: %s", text, arachne_last_error());
        return NULL;
    }
    return v;
}

TEST(parses_a_document_with_positions)
{
    const char *text = "{\n  \"a\": [1, -2.5e3, true, false, null],\n  \"b\": {\"c\": \"x\\ny\"}\n}";
    ar_json *v = good(text);
    const ar_json *a, *b;
    ASSERT(v != NULL);
    ASSERT_EQ(v->type, AR_JSON_OBJECT);
    ASSERT_EQ(v->count, 2);
    ASSERT_STR(v->keys[0], "a");
    a = ar_json_get(v, "a");
    ASSERT(a && a->type == AR_JSON_ARRAY && a->count == 5);
    ASSERT_EQ(a->line, 2);
    ASSERT_EQ(a->col, 8);
    ASSERT_EQ(a->items[1]->number, -2500);
    ASSERT_EQ(a->items[1]->col, 12);
    ASSERT_EQ(a->items[2]->type, AR_JSON_BOOL);
    ASSERT_EQ(a->items[2]->boolean, 1);
    ASSERT_EQ(a->items[3]->boolean, 0);
    ASSERT_EQ(a->items[4]->type, AR_JSON_NULL);
    b = ar_json_get(v, "b");
    ASSERT(b != NULL);
    ASSERT_STR(ar_json_get(b, "c")->string, "x\ny");
    ASSERT_EQ(b->line, 3);
    ASSERT(ar_json_get(v, "zz") == NULL);
    ASSERT(ar_json_get(a, "a") == NULL);
    ar_json_free(v);
    v = good("  42  ");
    ASSERT(v && v->type == AR_JSON_NUMBER && v->number == 42);
    ar_json_free(v);
    v = good("[]");
    ASSERT(v && v->count == 0);
    ar_json_free(v);
    v = good("{}");
    ASSERT(v && v->count == 0);
    ar_json_free(v);
    ar_json_free(NULL);
}

TEST(column_counts_characters_not_bytes)
{
    /* "é" is 2 bytes, one column: the bad token 'x' is at column 8 */
    BAD("[\"\xc3\xa9\xc3\xa9\", x]", 1, 8, "expected a value");
}

TEST(rejects_bad_numbers)
{
    BAD("[01]", 1, 2, "leading zeros");
    BAD("[-01]", 1, 2, "leading zeros");
    BAD("[+1]", 1, 2, "invalid number");
    BAD("[.5]", 1, 2, "invalid number");
    BAD("[1.]", 1, 2, "digit after '.'");
    BAD("[1.e5]", 1, 2, "digit after '.'");
    BAD("[1e]", 1, 2, "exponent");
    BAD("[1e+]", 1, 2, "exponent");
    BAD("[-]", 1, 2, "digit after '-'");
    BAD("[NaN]", 1, 2, "NaN");
    BAD("[Infinity]", 1, 2, "Infinity");
    BAD("[-Infinity]", 1, 2, "digit after '-'");
    BAD("[0x10]", 1, 3, "expected ',' or ']'");
}

TEST(rejects_overflowing_number)
{
    ar_json *v;
    BAD("{\"x\": 1e400}", 1, 7, "out of range");
    BAD("[-1e309]", 1, 2, "out of range");
    /* underflow to zero/subnormal is a representable number, accepted */
    v = good("[1e-400, 4.9e-324, 1.7976931348623157e308]");
    ASSERT(v != NULL);
    ASSERT_EQ(v->items[0]->number, 0);
    ASSERT(v->items[1]->number > 0);
    ASSERT(v->items[2]->number == 1.7976931348623157e308);
    ar_json_free(v);
}

TEST(rejects_trailing_garbage)
{
    BAD("{} x", 1, 4, "after the JSON value");
    BAD("[1] [2]", 1, 5, "after the JSON value");
    BAD("truex", 1, 5, "after the JSON value");
    BAD("nul", 1, 1, "expected a value");
    BAD("\"a\"\"b\"", 1, 4, "after the JSON value");
}

TEST(rejects_truncated_input)
{
    BAD("", 1, 1, "empty input");
    BAD("   \n ", 2, 2, "empty input");
    BAD("{", 1, 2, "expected a string key");
    BAD("{\"a\"", 1, 5, "expected ':'");
    BAD("{\"a\":", 1, 6, "end of input");
    BAD("{\"a\":1", 1, 7, "expected ',' or '}'");
    BAD("{\"a\":1,", 1, 8, "expected a string key");
    BAD("[1,", 1, 4, "end of input");
    BAD("[\"abc", 1, 2, "unterminated string");
    BAD("[\"abc\\", 1, 2, "unterminated string");
    BAD("[\"\\u12", 1, 2, "unterminated string");
    BAD("[\"\\u12\"]", 1, 3, "\\u escape");
    BAD("[tr", 1, 2, "expected a value");
}

TEST(rejects_structural_errors)
{
    BAD("{\"a\" 1}", 1, 6, "expected ':'");
    BAD("{\"a\":1 \"b\":2}", 1, 8, "expected ',' or '}'");
    BAD("{1:2}", 1, 2, "expected a string key");
    BAD("[1,]", 1, 4, "expected a value, got ']'");
    BAD("{\"a\":1,}", 1, 8, "expected a string key");
    BAD("[1\n,\n  2 3]", 3, 5, "expected ',' or ']'");
    BAD("'a'", 1, 1, "expected a value");
    BAD("\xef\xbb\xbf{}", 1, 1, "byte order mark");
}

TEST(rejects_duplicate_keys)
{
    char big[4096];
    size_t n = 0;
    int i;
    BAD("{\"a\":1,\"b\":2,\"a\":3}", 1, 14, "duplicate key \"a\"");
    BAD("{\"x\":{\"k\":1,\n \"k\":2}}", 2, 2, "duplicate key \"k\"");
    /* the hashed path for large objects */
    n += (size_t)snprintf(big + n, sizeof big - n, "{");
    for (i = 0; i < 100; i++) n += (size_t)snprintf(big + n, sizeof big - n, "%s\"k%d\":%d", i ? "," : "", i, i);
    n += (size_t)snprintf(big + n, sizeof big - n, ",\"k77\":0}");
    BAD(big, 1, (int)n - 7, "duplicate key \"k77\"");
    big[n - 9] = '\0';
    strcat(big, "}");
    {
        ar_json *v = good(big);
        ASSERT(v != NULL);
        ASSERT_EQ(v->count, 100);
        ASSERT_EQ(ar_json_get(v, "k99")->number, 99);
        ar_json_free(v);
    }
    /* keys equal only after unescaping are duplicates too */
    BAD("{\"ab\":1,\"a\\u0062\":2}", 1, 9, "duplicate key");
}

TEST(rejects_invalid_utf8)
{
    BAD("[\"\x80\"]", 1, 3, "invalid UTF-8 byte 0x80");
    BAD("[\"\xc0\x80\"]", 1, 3, "invalid UTF-8");         /* overlong NUL */
    BAD("[\"\xc1\xbf\"]", 1, 3, "invalid UTF-8");         /* overlong '?' */
    BAD("[\"\xe0\x80\xaf\"]", 1, 3, "invalid UTF-8");     /* overlong 3-byte */
    BAD("[\"\xf0\x80\x80\xaf\"]", 1, 3, "invalid UTF-8"); /* overlong 4-byte */
    BAD("[\"\xed\xa0\x80\"]", 1, 3, "invalid UTF-8");     /* U+D800 encoded */
    BAD("[\"\xed\xbf\xbf\"]", 1, 3, "invalid UTF-8");     /* U+DFFF encoded */
    BAD("[\"\xf4\x90\x80\x80\"]", 1, 3, "invalid UTF-8"); /* > U+10FFFF */
    BAD("[\"\xf5\x80\x80\x80\"]", 1, 3, "invalid UTF-8");
    BAD("[\"\xff\"]", 1, 3, "invalid UTF-8");
    BAD("[\"\xe2\x82\"]", 1, 3, "invalid UTF-8");         /* truncated sequence */
    BAD("[\"ab\xe2\x82\"]", 1, 5, "invalid UTF-8");
    BAD("[\"ab\xe2\x82", 1, 2, "unterminated string");
    BAD("[\xc3\xa9]", 1, 2, "expected a value");
    BAD("[\xff]", 1, 2, "invalid UTF-8 byte 0xff");
    {
        ar_json *v = good("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"]");
        ASSERT(v != NULL);
        ASSERT_STR(v->items[0]->string, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
        ar_json_free(v);
    }
}

TEST(unicode_escapes)
{
    ar_json *v = good("[\"\\u00e9\\u20AC\\ud83d\\ude00\\/\\b\\f\\r\\t\\\"\\\\\"]");
    ASSERT(v != NULL);
    ASSERT_STR(v->items[0]->string, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\b\f\r\t\"\\");
    ar_json_free(v);
    BAD("[\"\\u0000\"]", 1, 3, "\\u0000");
    BAD("[\"\\ud83d\"]", 1, 3, "lone high surrogate");
    BAD("[\"\\ud83dx\"]", 1, 3, "lone high surrogate");
    BAD("[\"\\ud83d\\u0041\"]", 1, 3, "lone high surrogate");
    BAD("[\"\\ude00\"]", 1, 3, "lone low surrogate");
    BAD("[\"\\uzzzz\"]", 1, 3, "\\u escape");
    BAD("[\"\\x41\"]", 1, 3, "invalid escape '\\x'");
    BADN("[\"a\0b\"]", 6, 1, 4, "control character 0x00");
    BAD("[\"a\nb\"]", 1, 4, "control character 0x0a");
}

TEST(nesting_depth_limit)
{
    char buf[2 * (AR_JSON_MAX_DEPTH + 2) + 1];
    ar_json *v;
    int d;
    for (d = 0; d < AR_JSON_MAX_DEPTH; d++) { buf[d] = '['; buf[2 * AR_JSON_MAX_DEPTH - 1 - d] = ']'; }
    buf[2 * AR_JSON_MAX_DEPTH] = '\0';
    v = good(buf);
    ASSERT(v != NULL);
    ar_json_free(v);
    for (d = 0; d < AR_JSON_MAX_DEPTH + 1; d++) { buf[d] = '['; buf[2 * AR_JSON_MAX_DEPTH + 1 - d] = ']'; }
    buf[2 * AR_JSON_MAX_DEPTH + 2] = '\0';
    BAD(buf, 1, AR_JSON_MAX_DEPTH + 1, "nesting deeper than 64");
    {
        /* a very deep input fails fast without recursing to the end */
        size_t n = 1000000;
        char *deep = malloc(n + 1);
        ASSERT(deep != NULL);
        memset(deep, '[', n);
        deep[n] = '\0';
        if (!bad(deep, n, 1, AR_JSON_MAX_DEPTH + 1, "nesting")) { free(deep); return; }
        memset(deep, '{', n);
        for (d = 0; d < 40; d++) memcpy(deep + 5 * d, "{\"a\":", 5);
        if (!bad(deep, n, 1, 202, "expected a string key")) { free(deep); return; }
        free(deep);
    }
}

TEST(size_limit_is_enforced_before_reading)
{
    ar_json *v = NULL;
    ASSERT_STATUS(ar_json_parse(&v, "[]", AR_JSON_MAX_BYTES + 1, "huge.json"), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "huge.json:1:1: ");
    ASSERT_CONTAINS(arachne_last_error(), "limit");
    ASSERT(v == NULL);
    ASSERT_STATUS(ar_json_parse(&v, NULL, 0, "x"), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_STATUS(ar_json_parse(NULL, "[]", 2, "x"), ARACHNE_E_INVALID_ARGUMENT);
}

TEST(random_doubles_round_trip_exactly)
{
    ar_rng r;
    int i, shortest = 0;
    ar_rng_seed(&r, 12345);
    for (i = 0; i < 10000; i++) {
        double x, y;
        char buf[40];
        int n;
        uint64_t bits = ar_rng_next(&r);
        switch (i % 4) {
        case 0: memcpy(&x, &bits, sizeof x); break;                 /* any bit pattern */
        case 1: x = ar_rng_uniform(&r); break;                       /* [0,1) */
        case 2: x = (ar_rng_uniform(&r) - 0.5) * 1e12; break;
        default: x = (double)(int)(ar_rng_next(&r) % 100000) / 100.0; break; /* short decimals */
        }
        if (!isfinite(x)) { i--; continue; }
        n = ar_json_format_double(buf, sizeof buf, x);
        ASSERT_EQ((size_t)n, strlen(buf));
        ASSERT_OK(ar_parse_double(buf, (size_t)n, &y));
        ASSERT_MSG(memcmp(&x, &y, sizeof x) == 0, "%.17g -> %s -> %.17g", x, buf, y);
        {
            /* and through the JSON reader */
            ar_json *v = NULL;
            ASSERT_OK(ar_json_parse(&v, buf, (size_t)n, "num"));
            ASSERT(memcmp(&v->number, &x, sizeof x) == 0);
            ar_json_free(v);
        }
        if (n <= 17) shortest++;
    }
    ASSERT_GT(shortest, 0);
}

TEST(format_double_is_shortest_and_valid_json)
{
    char buf[40];
    ar_json_format_double(buf, sizeof buf, 0.1);
    ASSERT_STR(buf, "0.1");
    ar_json_format_double(buf, sizeof buf, 1.0 / 3.0);
    ASSERT_STR(buf, "0.3333333333333333");
    ar_json_format_double(buf, sizeof buf, 42338615296.0);
    ASSERT_STR(buf, "42338615296");
    ar_json_format_double(buf, sizeof buf, 312e12);
    ASSERT_STR(buf, "312000000000000");
    ar_json_format_double(buf, sizeof buf, 1e300);
    ASSERT_STR(buf, "1e+300");
    ar_json_format_double(buf, sizeof buf, -0.0);
    ASSERT_STR(buf, "-0");
    ar_json_format_double(buf, sizeof buf, 5e-324);
    ASSERT_STR(buf, "4.94065645841247e-324");
    ar_json_format_double(buf, sizeof buf, NAN);
    ASSERT_STR(buf, "null");
    ar_json_format_double(buf, sizeof buf, -INFINITY);
    ASSERT_STR(buf, "null");
    {
        ar_buf b;
        ar_buf_init(&b);
        ar_json_put_number(&b, INFINITY);
        ar_buf_puts(&b, ",");
        ar_json_put_number(&b, 2.5);
        ASSERT_STR(b.data, "null,2.5");
        ar_buf_free(&b);
    }
}

TEST(parse_double_helper)
{
    double d = 0;
    ASSERT_OK(ar_parse_double("1.5e9", 5, &d));
    ASSERT_EQ(d, 1.5e9);
    ASSERT_OK(ar_parse_double("+.5", 3, &d));
    ASSERT_EQ(d * 2, 1);
    ASSERT_OK(ar_parse_double("12xyz", 2, &d)); /* only [s, s+len) is read */
    ASSERT_EQ(d, 12);
    ASSERT(ar_parse_double("1,5", 3, &d) != ARACHNE_OK);
    ASSERT(ar_parse_double("0x10", 4, &d) != ARACHNE_OK);
    ASSERT(ar_parse_double("inf", 3, &d) != ARACHNE_OK);
    ASSERT(ar_parse_double("1e999", 5, &d) != ARACHNE_OK);
    ASSERT(ar_parse_double(" 1", 2, &d) != ARACHNE_OK);
    ASSERT(ar_parse_double("", 0, &d) != ARACHNE_OK);
    ASSERT(ar_parse_double(".", 1, &d) != ARACHNE_OK);
}

TEST(numbers_ignore_a_decimal_comma_locale)
{
    static const char *names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "de_DE", "fr_FR",
                                   "ru_RU.UTF-8", NULL };
    locale_t comma = (locale_t)0, old;
    char buf[40];
    double d = 0;
    ar_json *v = NULL;
    int i, ok = 1;
    for (i = 0; names[i] && comma == (locale_t)0; i++) comma = newlocale(LC_NUMERIC_MASK, names[i], (locale_t)0);
    if (comma == (locale_t)0) SKIP("no locale with a decimal comma is installed");
    old = uselocale(comma);
    snprintf(buf, sizeof buf, "%.1f", 2.5);
    if (strcmp(buf, "2,5") != 0) { uselocale(old); freelocale(comma); SKIP("locale has no decimal comma"); }
    ar_json_format_double(buf, sizeof buf, 2.5);
    ok = ok && strcmp(buf, "2.5") == 0;
    ok = ok && ar_parse_double("2.5", 3, &d) == ARACHNE_OK && d == 2.5;
    ok = ok && ar_json_parse(&v, "[0.25]", 6, "x") == ARACHNE_OK && v->items[0]->number == 0.25;
    ar_json_free(v);
    uselocale(old);
    freelocale(comma);
    ASSERT_MSG(ok, "number text depends on the locale (got \"%s\", %g)", buf, d);
}

TEST(put_string_escapes)
{
    ar_buf b;
    ar_json *v = NULL;
    ar_buf_init(&b);
    ar_json_put_string(&b, "a\"b\\c\n\t\x01\xc3\xa9\xff/");
    ASSERT_OK(ar_buf_status(&b));
    ASSERT_STR(b.data, "\"a\\\"b\\\\c\\n\\t\\u0001\xc3\xa9\\ufffd/\"");
    ASSERT_OK(ar_json_parse(&v, b.data, b.len, "w"));
    ASSERT_STR(v->string, "a\"b\\c\n\t\x01\xc3\xa9\xef\xbf\xbd/");
    ar_json_free(v);
    ar_buf_free(&b);
}

TEST(typed_accessors)
{
    ar_json *v = good("{\"n\": 2.5, \"i\": 7, \"s\": \"hi\", \"b\": true, \"a\": [1], \"o\": {}}");
    double d = -1;
    long l = -1;
    const char *s = NULL;
    int bo = -1;
    const ar_json *j = NULL;
    static const char *const known[] = { "n", "i", "s", "b", "a", "o", NULL };
    static const char *const fewer[] = { "n", "i", NULL };
    ASSERT(v != NULL);
    ASSERT_OK(ar_json_num(v, "n", 1, &d));
    ASSERT_EQ(d * 2, 5);
    ASSERT_OK(ar_json_int(v, "i", 1, 0, 10, &l));
    ASSERT_EQ(l, 7);
    ASSERT_OK(ar_json_str(v, "s", 1, &s));
    ASSERT_STR(s, "hi");
    ASSERT_OK(ar_json_bool(v, "b", 1, &bo));
    ASSERT_EQ(bo, 1);
    ASSERT_OK(ar_json_arr(v, "a", 1, &j));
    ASSERT_EQ(j->count, 1);
    ASSERT_OK(ar_json_obj(v, "o", 1, &j));
    ASSERT_EQ(j->type, AR_JSON_OBJECT);
    d = 9;
    ASSERT_OK(ar_json_num(v, "absent", 0, &d));
    ASSERT_EQ(d, 9);
    ASSERT_OK(ar_json_only_keys(v, known));
    ASSERT_STATUS(ar_json_num(v, "absent", 1, &d), ARACHNE_E_PARSE);
    ASSERT_STR(arachne_last_error(), "t.json:1:1: missing key 'absent'");
    ASSERT_STATUS(ar_json_num(v, "s", 1, &d), ARACHNE_E_PARSE);
    ASSERT_STR(arachne_last_error(), "t.json:1:25: s: expected a number, got a string");
    ASSERT_STATUS(ar_json_int(v, "n", 1, 0, 10, &l), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "n: expected an integer in [0, 10]");
    ASSERT_STATUS(ar_json_int(v, "i", 1, 0, 5, &l), ARACHNE_E_PARSE);
    ASSERT_STATUS(ar_json_str(v, "b", 1, &s), ARACHNE_E_PARSE);
    ASSERT_STATUS(ar_json_bool(v, "n", 1, &bo), ARACHNE_E_PARSE);
    ASSERT_STATUS(ar_json_arr(v, "o", 1, &j), ARACHNE_E_PARSE);
    ASSERT_STATUS(ar_json_obj(v, "a", 1, &j), ARACHNE_E_PARSE);
    ASSERT_STATUS(ar_json_num(j, "x", 1, &d), ARACHNE_E_PARSE);
    ASSERT_STATUS(ar_json_only_keys(v, fewer), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "unknown key 's'");
    ASSERT_STATUS(ar_json_error_at(v, "custom %d", 3), ARACHNE_E_PARSE);
    ASSERT_STR(arachne_last_error(), "t.json:1:1: custom 3");
    ar_json_free(v);
}

TEST(parse_file_names_the_path)
{
    const char *dir = th_tmpdir();
    char path[512];
    ar_json *v = NULL;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/p.json", dir);
    ASSERT_OK(ar_write_file_atomic(path, "{\n\"a\": [1,\n2,,3]}", 17));
    ASSERT_STATUS(ar_json_parse_file(&v, path), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), path);
    ASSERT_CONTAINS(arachne_last_error(), ":3:3: expected a value");
    ASSERT_STATUS(ar_json_parse_file(&v, "/nonexistent/x.json"), ARACHNE_E_IO);
    ASSERT_OK(ar_write_file_atomic(path, "{\"a\": 1}", 8));
    ASSERT_OK(ar_json_parse_file(&v, path));
    ASSERT_STR(v->source, path);
    ar_json_free(v);
}

SUITE(json,
      T(parses_a_document_with_positions),
      T(column_counts_characters_not_bytes),
      T(rejects_bad_numbers),
      T(rejects_overflowing_number),
      T(rejects_trailing_garbage),
      T(rejects_truncated_input),
      T(rejects_structural_errors),
      T(rejects_duplicate_keys),
      T(rejects_invalid_utf8),
      T(unicode_escapes),
      T(nesting_depth_limit),
      T(size_limit_is_enforced_before_reading),
      T(random_doubles_round_trip_exactly),
      T(format_double_is_shortest_and_valid_json),
      T(parse_double_helper),
      T(numbers_ignore_a_decimal_comma_locale),
      T(put_string_escapes),
      T(typed_accessors),
      T(parse_file_names_the_path));
