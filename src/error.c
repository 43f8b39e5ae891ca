/* error.c -- version, status strings and the per-thread last error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

static _Thread_local char tls_error[AR_ERRMSG_CAP];

unsigned arachne_version(void) { return ARACHNE_VERSION_NUMBER; }

const char *arachne_version_string(void) { return ARACHNE_VERSION_STRING; }

const char *arachne_status_string(int status)
{
    switch (status) {
    case ARACHNE_OK: return "ok";
    case ARACHNE_E_INVALID_ARGUMENT: return "invalid argument";
    case ARACHNE_E_NO_MEMORY: return "out of memory";
    case ARACHNE_E_PARSE: return "parse error";
    case ARACHNE_E_NOT_FOUND: return "not found";
    case ARACHNE_E_INFEASIBLE: return "infeasible";
    case ARACHNE_E_IO: return "I/O error";
    case ARACHNE_E_CORRUPT: return "corrupt file";
    case ARACHNE_E_BUFFER_TOO_SMALL: return "buffer too small";
    case ARACHNE_E_UNSUPPORTED: return "unsupported";
    case ARACHNE_E_INVALID_PLAN: return "invalid plan";
    case ARACHNE_E_OUT_OF_MEMORY_PLAN: return "plan does not fit in GPU memory";
    case ARACHNE_E_CANCELLED: return "cancelled";
    default: return "unknown status";
    }
}

const char *arachne_last_error(void) { return tls_error; }

void arachne_clear_error(void) { tls_error[0] = '\0'; }

/* Control characters become '?': a message quotes names and text read
 * from files, and an escape sequence there (a model named "\033[2J...")
 * must not reach the terminal that prints it. */
static void strip_controls(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

int ar_error(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error, sizeof tls_error, fmt, ap);
    va_end(ap);
    strip_controls(tls_error);
    return status;
}

int ar_null_arg(const char *fn, const char *names, const void *const *ptrs, int n)
{
    const char *start = names, *end;
    int i;
    for (i = 0; i < n; i++) {
        while (*start == ' ' || *start == ',') start++;
        for (end = start; *end && *end != ','; end++) {}
        if (!ptrs[i])
            return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: argument '%.*s' is NULL", fn, (int)(end - start), start);
        start = end;
    }
    return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: NULL argument", fn);
}

void ar_error_prefix(const char *prefix)
{
    char tmp[AR_ERRMSG_CAP];
    size_t n = strlen(prefix);
    if (n > AR_ERRMSG_CAP - 3) n = AR_ERRMSG_CAP - 3;
    memcpy(tmp, prefix, n);
    tmp[n] = ':';
    tmp[n + 1] = ' ';
    memcpy(tmp + n + 2, tls_error, AR_ERRMSG_CAP - n - 2);
    tmp[AR_ERRMSG_CAP - 1] = '\0';
    memcpy(tls_error, tmp, sizeof tls_error);
    strip_controls(tls_error);
}
