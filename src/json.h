/* json.h -- strict RFC 8259 JSON reader (DOM) and writer helpers.
 *
 * Reader: UTF-8 validated, nesting depth limit AR_JSON_MAX_DEPTH, input size
 * limit AR_JSON_MAX_BYTES, duplicate object keys rejected, numbers parsed
 * independently of the C locale.  Every error message has the form
 *     "<source>:<line>:<col>: <what>"        e.g. "plan.json:12:7: expected ',' or '}'"
 * Writer: numbers printed locale-independently with the shortest text that
 * reads back to the same double (round-trip exact). */
#ifndef ARACHNE_JSON_H
#define ARACHNE_JSON_H

#include <stddef.h>
#include "util.h"

#define AR_JSON_MAX_DEPTH 64
#define AR_JSON_MAX_BYTES ((size_t)256 << 20)

typedef enum ar_json_type {
    AR_JSON_NULL, AR_JSON_BOOL, AR_JSON_NUMBER, AR_JSON_STRING, AR_JSON_ARRAY, AR_JSON_OBJECT
} ar_json_type;

typedef struct ar_json ar_json;
struct ar_json {
    ar_json_type type;
    int line, col;        /* 1-based position of the value's first character */
    int boolean;          /* AR_JSON_BOOL */
    double number;        /* AR_JSON_NUMBER */
    char *string;         /* AR_JSON_STRING: NUL-terminated UTF-8 (may contain no NUL: "\u0000" is rejected) */
    size_t count;         /* ARRAY / OBJECT: number of items */
    ar_json **items;      /* ARRAY / OBJECT: values in document order */
    char **keys;          /* OBJECT: keys[i] names items[i] */
    const char *source;   /* borrowed: the source name given to ar_json_parse (for messages) */
};

/* Parses text[0..len) into a tree.  source names the input in messages
 * ("cluster.json", "<string>"); it must outlive the tree.  Returns
 * ARACHNE_OK, ARACHNE_E_PARSE (message "<source>:<line>:<col>: ..."),
 * or ARACHNE_E_NO_MEMORY.  *out is NULL on failure. */
int ar_json_parse(ar_json **out, const char *text, size_t len, const char *source);
/* Reads a file and parses it (source = path).  ARACHNE_E_IO if unreadable. */
int ar_json_parse_file(ar_json **out, const char *path);
void ar_json_free(ar_json *v);

/* Member lookup; NULL if v is not an object or has no such key. */
const ar_json *ar_json_get(const ar_json *v, const char *key);

/* Typed member access for loaders.  Each fails with ARACHNE_E_PARSE and a
 * message "<source>:<line>:<col>: <key>: expected <type>" (position of the
 * offending value, or of the object when a required key is missing:
 * "missing key '<key>'").  When required == 0 and the key is absent the
 * output is left untouched and ARACHNE_OK is returned. */
int ar_json_num(const ar_json *obj, const char *key, int required, double *out);
/* Integer: a number with no fractional part within [lo, hi]. */
int ar_json_int(const ar_json *obj, const char *key, int required, long lo, long hi, long *out);
int ar_json_str(const ar_json *obj, const char *key, int required, const char **out);
int ar_json_bool(const ar_json *obj, const char *key, int required, int *out);
/* Member that must be an array / object (returned borrowed). */
int ar_json_arr(const ar_json *obj, const char *key, int required, const ar_json **out);
int ar_json_obj(const ar_json *obj, const char *key, int required, const ar_json **out);
/* Fails when obj has a key not in the NULL-terminated list `known`
 * (catches typos in hand-written files). */
int ar_json_only_keys(const ar_json *obj, const char *const *known);
/* Sets an error "<source>:<line>:<col>: <msg>" at v's position; returns ARACHNE_E_PARSE. */
int ar_json_error_at(const ar_json *v, const char *fmt, ...) AR_PRINTF(2, 3);

/* Writer helpers appending to an ar_buf. */
void ar_json_put_string(ar_buf *b, const char *s);   /* quoted, escaped */
void ar_json_put_number(ar_buf *b, double v);        /* shortest round-trip; non-finite -> null */
/* Formats a double with the shortest round-trip representation into
 * buf (at least 32 bytes); returns the length. Locale independent. */
int ar_json_format_double(char *buf, size_t cap, double v);
/* Locale-independent strtod over [s, end) — used by the reader and by other
 * parsers (cluster strings).  Returns 0 and sets *out on success. */
int ar_parse_double(const char *s, size_t len, double *out);

#endif
