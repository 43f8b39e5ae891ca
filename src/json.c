/* json.c -- strict RFC 8259 reader (DOM) and writer helpers.
 *
 * Reader: one recursive-descent pass over the bytes.  Strings are checked for
 * well-formed UTF-8 (no overlongs, no UTF-8-encoded surrogates, nothing above
 * U+10FFFF); \u escapes are decoded with surrogate pairs; \u0000 and lone
 * surrogates are rejected.  Duplicate keys, leading zeros, "+1", ".5", "1.",
 * NaN/Infinity, numbers that overflow a double, nesting deeper than
 * AR_JSON_MAX_DEPTH and trailing garbage are errors.
 *
 * Numbers: the syntax is checked here; the conversion uses strtod under the
 * "C" locale installed for the calling thread only (uselocale), so a program
 * running under a locale with a decimal comma reads and writes the same bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* ------------------------------------------------------------------------ */
/* "C" locale for number conversion                                          */
/* ------------------------------------------------------------------------ */

static _Atomic(locale_t) c_locale_cache;

/* Returns a process-wide "C" numeric locale, or (locale_t)0 if newlocale
 * failed (then the caller falls back to the global locale, which is "C"
 * unless the program called setlocale). */
static locale_t c_locale(void)
{
    locale_t l = atomic_load(&c_locale_cache);
    if (l == (locale_t)0) {
        locale_t fresh = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        locale_t expected = (locale_t)0;
        if (fresh == (locale_t)0) return (locale_t)0;
        if (atomic_compare_exchange_strong(&c_locale_cache, &expected, fresh)) {
            l = fresh;
        } else {
            freelocale(fresh);
            l = expected;
        }
    }
    return l;
}

/* Numeric syntax accepted by ar_parse_double: [+-]? digits [. digits]? ([eE] [+-]? digits)?
 * where either side of the '.' may be empty but not both.  Returns the
 * length of the valid prefix that makes a whole number (or 0). */
static size_t number_syntax(const char *s, size_t len)
{
    size_t i = 0, int_digits = 0, frac_digits = 0;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    while (i < len && s[i] >= '0' && s[i] <= '9') { i++; int_digits++; }
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') { i++; frac_digits++; }
    }
    if (int_digits + frac_digits == 0) return 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp_digits = 0;
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') { i++; exp_digits++; }
        if (exp_digits == 0) return 0;
    }
    return i;
}

/* strtod over a NUL-terminated copy, in the "C" locale. */
static double strtod_c(const char *z, char **end)
{
    locale_t cl = c_locale();
    if (cl != (locale_t)0) {
        locale_t old = uselocale(cl);
        double v = strtod(z, end);
        uselocale(old);
        return v;
    }
    return strtod(z, end);
}

int ar_parse_double(const char *s, size_t len, double *out)
{
    char small[64], *z = small, *end = NULL;
    double v;
    if (!s || !out || len == 0 || number_syntax(s, len) != len) return ARACHNE_E_PARSE;
    if (len >= sizeof small) {
        z = malloc(len + 1);
        if (!z) return ARACHNE_E_NO_MEMORY;
    }
    memcpy(z, s, len);
    z[len] = '\0';
    v = strtod_c(z, &end);
    if (end != z + len || isinf(v) || isnan(v)) {
        if (z != small) free(z);
        return ARACHNE_E_PARSE;
    }
    if (z != small) free(z);
    *out = v;
    return ARACHNE_OK;
}

int ar_json_format_double(char *buf, size_t cap, double v)
{
    char tmp[40];
    int prec, n = 0;
    locale_t cl, old = (locale_t)0;
    if (!isfinite(v)) {
        n = 4;
        memcpy(tmp, "null", 5);
    } else {
        cl = c_locale();
        if (cl != (locale_t)0) old = uselocale(cl);
        for (prec = 15; prec <= 17; prec++) {
            char *end;
            n = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
            if (strtod(tmp, &end) == v) break;
        }
        if (cl != (locale_t)0) uselocale(old);
    }
    if (n < 0) n = 0;
    if (buf && cap > 0) {
        size_t k = (size_t)n < cap ? (size_t)n : cap - 1;
        memcpy(buf, tmp, k);
        buf[k] = '\0';
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct parser {
    const unsigned char *s;
    size_t len, pos;
    const char *source;
    int line;             /* current line (1-based) */
    size_t line_start;    /* offset of the first byte of the current line */
    size_t ck_pos;        /* column checkpoint on the current line */
    int ck_col;
    int failed;           /* 0, or the status of the first failure */
} parser;

/* Column (1-based, in characters: UTF-8 continuation bytes do not count) of
 * offset pos, which must be on the current line. */
static int column_of(parser *p, size_t pos)
{
    size_t i;
    int col;
    if (pos < p->line_start) pos = p->line_start;
    if (p->ck_pos < p->line_start || pos < p->ck_pos) {
        p->ck_pos = p->line_start;
        p->ck_col = 1;
    }
    col = p->ck_col;
    for (i = p->ck_pos; i < pos && i < p->len; i++)
        if ((p->s[i] & 0xC0) != 0x80) col++;
    p->ck_pos = pos;
    p->ck_col = col;
    return col;
}

static int perr(parser *p, size_t pos, const char *fmt, ...) AR_PRINTF(3, 4);
static int perr(parser *p, size_t pos, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    int col = column_of(p, pos);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->failed = ARACHNE_E_PARSE;
    return ar_error(ARACHNE_E_PARSE, "%s:%d:%d: %s", p->source, p->line, col, msg);
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || c == '\r') {
            p->pos++;
        } else if (c == '\n') {
            p->pos++;
            p->line++;
            p->line_start = p->pos;
        } else {
            break;
        }
    }
}

/* Describes the byte at pos for messages. */
static const char *describe(parser *p, size_t pos, char *buf, size_t cap)
{
    unsigned char c;
    if (pos >= p->len) return "end of input";
    c = p->s[pos];
    if (c >= 0x20 && c < 0x7F) snprintf(buf, cap, "'%c'", c);
    else snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static ar_json *new_node(parser *p, ar_json_type t, size_t pos)
{
    ar_json *v = calloc(1, sizeof *v);
    if (!v) {
        p->failed = ARACHNE_E_NO_MEMORY;
        ar_error(ARACHNE_E_NO_MEMORY, "%s: out of memory building the JSON tree", p->source);
        return NULL;
    }
    v->type = t;
    v->line = p->line;
    v->col = column_of(p, pos);
    v->source = p->source;
    return v;
}

/* Decodes one UTF-8 sequence at s[i..len); returns its length (1..4) and the
 * code point, or 0 if malformed (overlong, surrogate, > U+10FFFF, truncated,
 * stray continuation byte). */
static int utf8_decode(const unsigned char *s, size_t i, size_t len, unsigned *cp)
{
    unsigned c = s[i], min, v;
    int n, k;
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xC2 && c <= 0xDF) { n = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (len - i < (size_t)n) return 0;
    for (k = 1; k < n; k++) {
        unsigned d = s[i + k];
        if ((d & 0xC0) != 0x80) return 0;
        v = (v << 6) | (d & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

static size_t utf8_encode(unsigned cp, char *out)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex4(const unsigned char *s, size_t i, size_t len, unsigned *out)
{
    unsigned v = 0;
    int k;
    if (len - i < 4) return 0;
    for (k = 0; k < 4; k++) {
        unsigned c = s[i + k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return 0;
    }
    *out = v;
    return 1;
}

/* Parses a string starting at the opening quote; returns a malloc'd
 * NUL-terminated UTF-8 copy or NULL (error set). */
static char *parse_string(parser *p)
{
    size_t start = p->pos, i, cap, n = 0;
    char *out;
    i = ++p->pos;
    /* First pass: find the closing quote to size the output (escapes only shrink). */
    while (i < p->len && p->s[i] != '"') {
        if (p->s[i] == '\\' && i + 1 < p->len) i++;
        i++;
    }
    if (i >= p->len) {
        perr(p, start, "unterminated string");
        return NULL;
    }
    cap = i - p->pos + 1;
    out = malloc(cap);
    if (!out) {
        p->failed = ARACHNE_E_NO_MEMORY;
        ar_error(ARACHNE_E_NO_MEMORY, "%s: out of memory reading a string", p->source);
        return NULL;
    }
    for (;;) {
        unsigned char c;
        if (p->pos >= p->len) {
            perr(p, start, "unterminated string");
            goto fail;
        }
        c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            perr(p, p->pos, "control character 0x%02x in string (escape it)", c);
            goto fail;
        }
        if (c == '\\') {
            size_t esc = p->pos;
            unsigned cp;
            char e;
            if (p->pos + 1 >= p->len) {
                perr(p, esc, "unterminated string");
                goto fail;
            }
            e = (char)p->s[p->pos + 1];
            p->pos += 2;
            switch (e) {
            case '"': out[n++] = '"'; break;
            case '\\': out[n++] = '\\'; break;
            case '/': out[n++] = '/'; break;
            case 'b': out[n++] = '\b'; break;
            case 'f': out[n++] = '\f'; break;
            case 'n': out[n++] = '\n'; break;
            case 'r': out[n++] = '\r'; break;
            case 't': out[n++] = '\t'; break;
            case 'u':
                if (!hex4(p->s, p->pos, p->len, &cp)) {
                    perr(p, esc, "invalid \\u escape (want 4 hex digits)");
                    goto fail;
                }
                p->pos += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    perr(p, esc, "lone low surrogate \\u%04X", cp);
                    goto fail;
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (p->pos + 6 > p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' ||
                        !hex4(p->s, p->pos + 2, p->len, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        perr(p, esc, "lone high surrogate \\u%04X (not followed by a low surrogate)", cp);
                        goto fail;
                    }
                    p->pos += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp == 0) {
                    perr(p, esc, "\\u0000 is not allowed in strings");
                    goto fail;
                }
                n += utf8_encode(cp, out + n);
                break;
            default:
                if ((unsigned char)e >= 0x20 && (unsigned char)e < 0x7F)
                    perr(p, esc, "invalid escape '\\%c'", e);
                else
                    perr(p, esc, "invalid escape (byte 0x%02x after '\\')", (unsigned char)e);
                goto fail;
            }
            continue;
        }
        if (c < 0x80) {
            out[n++] = (char)c;
            p->pos++;
        } else {
            unsigned cp;
            int k = utf8_decode(p->s, p->pos, p->len, &cp);
            if (k == 0) {
                perr(p, p->pos, "invalid UTF-8 byte 0x%02x in string", c);
                goto fail;
            }
            memcpy(out + n, p->s + p->pos, (size_t)k);
            n += (size_t)k;
            p->pos += (size_t)k;
        }
    }
    out[n] = '\0';
    return out;
fail:
    free(out);
    return NULL;
}

static ar_json *parse_value(parser *p, int depth);

static int grow(parser *p, ar_json *v, size_t *cap, int with_keys)
{
    size_t ncap;
    ar_json **ni;
    if (v->count < *cap) return 1;
    ncap = *cap ? *cap * 2 : 4;
    ni = realloc(v->items, ncap * sizeof *ni);
    if (!ni) goto oom;
    v->items = ni;
    if (with_keys) {
        char **nk = realloc(v->keys, ncap * sizeof *nk);
        if (!nk) goto oom;
        v->keys = nk;
    }
    *cap = ncap;
    return 1;
oom:
    p->failed = ARACHNE_E_NO_MEMORY;
    ar_error(ARACHNE_E_NO_MEMORY, "%s: out of memory building the JSON tree", p->source);
    return 0;
}

static ar_json *parse_array(parser *p, int depth)
{
    size_t cap = 0;
    ar_json *v = new_node(p, AR_JSON_ARRAY, p->pos);
    if (!v) return NULL;
    p->pos++; /* '[' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        return v;
    }
    for (;;) {
        ar_json *item;
        char d[16];
        skip_ws(p);
        item = parse_value(p, depth + 1);
        if (!item) goto fail;
        if (!grow(p, v, &cap, 0)) { ar_json_free(item); goto fail; }
        v->items[v->count++] = item;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') { p->pos++; continue; }
        if (p->pos < p->len && p->s[p->pos] == ']') { p->pos++; return v; }
        perr(p, p->pos, "expected ',' or ']' after array item, got %s", describe(p, p->pos, d, sizeof d));
        goto fail;
    }
fail:
    ar_json_free(v);
    return NULL;
}

/* Duplicate-key detection: linear for small objects, an open-addressing hash
 * set of item indices once an object grows past LINEAR_KEYS. */
#define LINEAR_KEYS 16

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603ULL & (size_t)-1;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * (size_t)1099511628211ULL;
    return h;
}

typedef struct keyset { size_t *slot; size_t cap; } keyset; /* slot: index+1, 0 = empty */

static int keyset_insert(keyset *ks, char **keys, size_t idx, size_t count_after)
{
    size_t h;
    if (count_after * 2 > ks->cap) {
        size_t ncap = ks->cap ? ks->cap * 2 : 64, i;
        size_t *ns;
        while (count_after * 2 > ncap) ncap *= 2;
        ns = calloc(ncap, sizeof *ns);
        if (!ns) return -1;
        for (i = 0; i < ks->cap; i++) {
            if (ks->slot[i]) {
                size_t j = hash_str(keys[ks->slot[i] - 1]) & (ncap - 1);
                while (ns[j]) j = (j + 1) & (ncap - 1);
                ns[j] = ks->slot[i];
            }
        }
        free(ks->slot);
        ks->slot = ns;
        ks->cap = ncap;
    }
    h = hash_str(keys[idx]) & (ks->cap - 1);
    while (ks->slot[h]) {
        if (strcmp(keys[ks->slot[h] - 1], keys[idx]) == 0) return 1;
        h = (h + 1) & (ks->cap - 1);
    }
    ks->slot[h] = idx + 1;
    return 0;
}

static ar_json *parse_object(parser *p, int depth)
{
    size_t cap = 0;
    keyset ks = { NULL, 0 };
    ar_json *v = new_node(p, AR_JSON_OBJECT, p->pos);
    if (!v) return NULL;
    p->pos++; /* '{' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '}') {
        p->pos++;
        return v;
    }
    for (;;) {
        size_t key_pos;
        char *key;
        ar_json *item;
        char d[16];
        int dup = 0;
        skip_ws(p);
        key_pos = p->pos;
        if (p->pos >= p->len || p->s[p->pos] != '"') {
            perr(p, p->pos, "expected a string key, got %s", describe(p, p->pos, d, sizeof d));
            goto fail;
        }
        key = parse_string(p);
        if (!key) goto fail;
        /* Check for a duplicate before storing. */
        if (v->count < LINEAR_KEYS) {
            size_t i;
            for (i = 0; i < v->count; i++)
                if (strcmp(v->keys[i], key) == 0) { dup = 1; break; }
        }
        if (dup) {
            perr(p, key_pos, "duplicate key \"%.64s\"", key);
            free(key);
            goto fail;
        }
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
            perr(p, p->pos, "expected ':' after key, got %s", describe(p, p->pos, d, sizeof d));
            free(key);
            goto fail;
        }
        p->pos++;
        skip_ws(p);
        if (!grow(p, v, &cap, 1)) { free(key); goto fail; }
        v->keys[v->count] = key;
        if (v->count + 1 > LINEAR_KEYS) {
            int r;
            size_t i;
            if (ks.cap == 0) {
                /* switch to hashing: insert the keys seen so far (all distinct) */
                for (i = 0; i < v->count; i++)
                    if (keyset_insert(&ks, v->keys, i, v->count + 1) < 0) goto oom_key;
            }
            r = keyset_insert(&ks, v->keys, v->count, v->count + 1);
            if (r < 0) goto oom_key;
            if (r > 0) {
                perr(p, key_pos, "duplicate key \"%.64s\"", key);
                free(key);
                goto fail;
            }
        }
        item = parse_value(p, depth + 1);
        if (!item) { free(key); goto fail; }
        v->items[v->count++] = item;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') { p->pos++; continue; }
        if (p->pos < p->len && p->s[p->pos] == '}') { p->pos++; free(ks.slot); return v; }
        perr(p, p->pos, "expected ',' or '}' after object member, got %s", describe(p, p->pos, d, sizeof d));
        goto fail;
    oom_key:
        free(key);
        p->failed = ARACHNE_E_NO_MEMORY;
        ar_error(ARACHNE_E_NO_MEMORY, "%s: out of memory building the JSON tree", p->source);
        goto fail;
    }
fail:
    free(ks.slot);
    ar_json_free(v);
    return NULL;
}

static ar_json *parse_number(parser *p)
{
    size_t start = p->pos, i = p->pos;
    const unsigned char *s = p->s;
    double d;
    ar_json *v;
    if (i < p->len && s[i] == '-') i++;
    if (i >= p->len || !(s[i] >= '0' && s[i] <= '9')) {
        perr(p, start, "invalid number: expected a digit after '-'");
        return NULL;
    }
    if (s[i] == '0') {
        i++;
        if (i < p->len && s[i] >= '0' && s[i] <= '9') {
            perr(p, start, "invalid number: leading zeros are not allowed");
            return NULL;
        }
    } else {
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < p->len && s[i] == '.') {
        i++;
        if (i >= p->len || !(s[i] >= '0' && s[i] <= '9')) {
            perr(p, start, "invalid number: expected a digit after '.'");
            return NULL;
        }
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= p->len || !(s[i] >= '0' && s[i] <= '9')) {
            perr(p, start, "invalid number: expected a digit in the exponent");
            return NULL;
        }
        while (i < p->len && s[i] >= '0' && s[i] <= '9') i++;
    }
    {
        int st = ar_parse_double((const char *)s + start, i - start, &d);
        if (st == ARACHNE_E_NO_MEMORY) {
            p->failed = ARACHNE_E_NO_MEMORY;
            ar_error(ARACHNE_E_NO_MEMORY, "%s: out of memory reading a number", p->source);
            return NULL;
        }
        if (st != ARACHNE_OK) {
            perr(p, start, "number %.*s%s is out of range for a double", (int)AR_MIN(i - start, 40),
                 (const char *)s + start, i - start > 40 ? "..." : "");
            return NULL;
        }
    }
    v = new_node(p, AR_JSON_NUMBER, start);
    if (!v) return NULL;
    v->number = d;
    p->pos = i;
    return v;
}

static int match_word(parser *p, const char *w)
{
    size_t n = strlen(w);
    return p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0;
}

static ar_json *parse_value(parser *p, int depth)
{
    unsigned char c;
    ar_json *v;
    char d[16];
    if (p->pos >= p->len) {
        perr(p, p->pos, "unexpected end of input (expected a value)");
        return NULL;
    }
    c = p->s[p->pos];
    switch (c) {
    case '{':
    case '[':
        if (depth >= AR_JSON_MAX_DEPTH) {
            perr(p, p->pos, "nesting deeper than %d levels", AR_JSON_MAX_DEPTH);
            return NULL;
        }
        return c == '{' ? parse_object(p, depth) : parse_array(p, depth);
    case '"': {
        size_t start = p->pos;
        int line = p->line;
        char *s = parse_string(p);
        if (!s) return NULL;
        v = calloc(1, sizeof *v);
        if (!v) {
            free(s);
            p->failed = ARACHNE_E_NO_MEMORY;
            ar_error(ARACHNE_E_NO_MEMORY, "%s: out of memory building the JSON tree", p->source);
            return NULL;
        }
        v->type = AR_JSON_STRING;
        v->line = line;
        v->col = column_of(p, start);
        v->source = p->source;
        v->string = s;
        return v;
    }
    case 't':
    case 'f':
    case 'n':
        if (match_word(p, "true") || match_word(p, "false") || match_word(p, "null")) {
            size_t n = c == 'f' ? 5 : 4;
            v = new_node(p, c == 'n' ? AR_JSON_NULL : AR_JSON_BOOL, p->pos);
            if (!v) return NULL;
            v->boolean = c == 't';
            p->pos += n;
            /* "truex" is caught by the caller as trailing garbage / missing ',' */
            return v;
        }
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p);
        break;
    }
    if (c == '+' || c == '.') {
        perr(p, p->pos, "invalid number: a number starts with '-' or a digit");
        return NULL;
    }
    if (match_word(p, "NaN") || match_word(p, "Infinity") || match_word(p, "nan") || match_word(p, "inf")) {
        perr(p, p->pos, "NaN and Infinity are not JSON numbers");
        return NULL;
    }
    if (c == '}' || c == ']') {
        perr(p, p->pos, "expected a value, got %s", describe(p, p->pos, d, sizeof d));
        return NULL;
    }
    if (c >= 0x80) {
        unsigned cp;
        if (utf8_decode(p->s, p->pos, p->len, &cp) == 0) {
            perr(p, p->pos, "invalid UTF-8 byte 0x%02x", c);
            return NULL;
        }
    }
    perr(p, p->pos, "expected a value, got %s", describe(p, p->pos, d, sizeof d));
    return NULL;
}

int ar_json_parse(ar_json **out, const char *text, size_t len, const char *source)
{
    parser p;
    ar_json *v;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_json_parse: out is NULL");
    *out = NULL;
    if (!source) source = "<input>";
    if (!text) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: no JSON text (NULL)", source);
    if (len > AR_JSON_MAX_BYTES)
        return ar_error(ARACHNE_E_PARSE, "%s:1:1: input of %zu bytes exceeds the %zu-byte limit", source, len,
                        AR_JSON_MAX_BYTES);
    memset(&p, 0, sizeof p);
    p.s = (const unsigned char *)text;
    p.len = len;
    p.source = source;
    p.line = 1;
    p.ck_col = 1;
    if (len >= 3 && p.s[0] == 0xEF && p.s[1] == 0xBB && p.s[2] == 0xBF)
        return perr(&p, 0, "byte order mark (U+FEFF) at the start is not allowed");
    skip_ws(&p);
    if (p.pos >= p.len) return perr(&p, p.pos, "empty input (expected a JSON value)");
    v = parse_value(&p, 0);
    if (!v) {
        /* perr or an allocation failure set the message */
        return p.failed ? p.failed : ARACHNE_E_PARSE;
    }
    skip_ws(&p);
    if (p.pos < p.len) {
        char d[16];
        ar_json_free(v);
        return perr(&p, p.pos, "unexpected %s after the JSON value", describe(&p, p.pos, d, sizeof d));
    }
    *out = v;
    return ARACHNE_OK;
}

int ar_json_parse_file(ar_json **out, const char *path)
{
    char *data;
    size_t len;
    int st;
    if (!out) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_json_parse_file: out is NULL");
    *out = NULL;
    if (!path) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "ar_json_parse_file: path is NULL");
    st = ar_read_file(path, &data, &len);
    if (st != ARACHNE_OK) return st;
    st = ar_json_parse(out, data, len, path);
    free(data);
    return st;
}

void ar_json_free(ar_json *v)
{
    size_t i;
    if (!v) return;
    for (i = 0; i < v->count; i++) {
        ar_json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    free(v);
}

/* ------------------------------------------------------------------------ */
/* Typed access                                                              */
/* ------------------------------------------------------------------------ */

const ar_json *ar_json_get(const ar_json *v, const char *key)
{
    size_t i;
    if (!v || v->type != AR_JSON_OBJECT || !key) return NULL;
    for (i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0) return v->items[i];
    return NULL;
}

int ar_json_error_at(const ar_json *v, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!v) return ar_error(ARACHNE_E_PARSE, "%s", msg);
    return ar_error(ARACHNE_E_PARSE, "%s:%d:%d: %s", v->source ? v->source : "<input>", v->line, v->col, msg);
}

static const char *type_name(ar_json_type t)
{
    switch (t) {
    case AR_JSON_NULL: return "null";
    case AR_JSON_BOOL: return "a boolean";
    case AR_JSON_NUMBER: return "a number";
    case AR_JSON_STRING: return "a string";
    case AR_JSON_ARRAY: return "an array";
    case AR_JSON_OBJECT: return "an object";
    }
    return "?";
}

/* Common lookup: 1 found (in *m), 0 absent and optional, <0 error. */
static int member(const ar_json *obj, const char *key, int required, ar_json_type want, const ar_json **m)
{
    const ar_json *v;
    if (!obj || obj->type != AR_JSON_OBJECT) {
        if (!obj) return ar_error(ARACHNE_E_PARSE, "expected an object holding '%s'", key);
        return ar_json_error_at(obj, "expected an object holding '%s', got %s", key, type_name(obj->type));
    }
    v = ar_json_get(obj, key);
    if (!v) {
        if (required) return ar_json_error_at(obj, "missing key '%s'", key);
        return 0;
    }
    if (v->type != want) return ar_json_error_at(v, "%s: expected %s, got %s", key, type_name(want), type_name(v->type));
    *m = v;
    return 1;
}

int ar_json_num(const ar_json *obj, const char *key, int required, double *out)
{
    const ar_json *v = NULL;
    int r = member(obj, key, required, AR_JSON_NUMBER, &v);
    if (r <= 0) return r;
    *out = v->number;
    return ARACHNE_OK;
}

int ar_json_int(const ar_json *obj, const char *key, int required, long lo, long hi, long *out)
{
    const ar_json *v = NULL;
    int r = member(obj, key, required, AR_JSON_NUMBER, &v);
    if (r <= 0) return r;
    if (v->number != floor(v->number) || v->number < (double)lo || v->number > (double)hi)
        return ar_json_error_at(v, "%s: expected an integer in [%ld, %ld]", key, lo, hi);
    *out = (long)v->number;
    return ARACHNE_OK;
}

int ar_json_str(const ar_json *obj, const char *key, int required, const char **out)
{
    const ar_json *v = NULL;
    int r = member(obj, key, required, AR_JSON_STRING, &v);
    if (r <= 0) return r;
    *out = v->string;
    return ARACHNE_OK;
}

int ar_json_bool(const ar_json *obj, const char *key, int required, int *out)
{
    const ar_json *v = NULL;
    int r = member(obj, key, required, AR_JSON_BOOL, &v);
    if (r <= 0) return r;
    *out = v->boolean;
    return ARACHNE_OK;
}

int ar_json_arr(const ar_json *obj, const char *key, int required, const ar_json **out)
{
    const ar_json *v = NULL;
    int r = member(obj, key, required, AR_JSON_ARRAY, &v);
    if (r <= 0) return r;
    *out = v;
    return ARACHNE_OK;
}

int ar_json_obj(const ar_json *obj, const char *key, int required, const ar_json **out)
{
    const ar_json *v = NULL;
    int r = member(obj, key, required, AR_JSON_OBJECT, &v);
    if (r <= 0) return r;
    *out = v;
    return ARACHNE_OK;
}

int ar_json_only_keys(const ar_json *obj, const char *const *known)
{
    size_t i;
    if (!obj || obj->type != AR_JSON_OBJECT) return ar_json_error_at(obj, "expected an object");
    for (i = 0; i < obj->count; i++) {
        const char *const *k;
        for (k = known; *k; k++)
            if (strcmp(*k, obj->keys[i]) == 0) break;
        if (!*k) {
            char list[256];
            size_t n = 0;
            list[0] = '\0';
            for (k = known; *k && n + strlen(*k) + 4 < sizeof list; k++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *k);
            return ar_json_error_at(obj->items[i], "unknown key '%.64s' (expected one of: %s)", obj->keys[i], list);
        }
    }
    return ARACHNE_OK;
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */
/* ------------------------------------------------------------------------ */

void ar_json_put_string(ar_buf *b, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t len = strlen((const char *)u), i = 0, run = 0;
    ar_buf_put(b, "\"", 1);
    while (i < len) {
        unsigned char c = u[i];
        const char *esc = NULL;
        char tmp[8];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) { i++; run++; continue; }
        if (c >= 0x80) {
            unsigned cp;
            int k = utf8_decode(u, i, len, &cp);
            if (k > 0) { i += (size_t)k; run += (size_t)k; continue; }
            esc = "\\ufffd"; /* invalid byte: replacement character keeps the output valid */
        } else if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\t') esc = "\\t";
        else if (c == '\r') esc = "\\r";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            esc = tmp;
        }
        ar_buf_put(b, (const char *)u + i - run, run);
        run = 0;
        ar_buf_puts(b, esc);
        i++;
    }
    ar_buf_put(b, (const char *)u + i - run, run);
    ar_buf_put(b, "\"", 1);
}

void ar_json_put_number(ar_buf *b, double v)
{
    char tmp[40];
    int n = ar_json_format_double(tmp, sizeof tmp, v);
    ar_buf_put(b, tmp, (size_t)n);
}
