#include "kube_retry.h"

#include "backoff.h"
#include "clock.h"

#include <curl/curl.h>
#include <string.h>
#include <strings.h>

/* Is the failure worth another attempt at all, before counting and timing? Sets *why to
 * the reason of a "no". */
static int retryable(const kube_retry_in_t *in, kube_retry_reason_t *why)
{
    *why = KUBE_RETRY_FINAL;
    if (in->curl_code != CURLE_OK) {
        switch (in->curl_code) {
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SSL_CONNECT_ERROR:
            return 1; /* no connection: nothing reached the server */
        case CURLE_OPERATION_TIMEDOUT:
            return !in->sent; /* the connect timeout; once sent, the call's own */
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
            if (in->idempotent || !in->sent)
                return 1;
            *why = KUBE_RETRY_MAY_HAVE_ACTED;
            return 0;
        case CURLE_SEND_FAIL_REWIND:
            /* libcurl wanted to send it again on a fresh connection after its reused one
             * died without an answer: only a request safe to repeat (kc_set_body) */
            *why = KUBE_RETRY_MAY_HAVE_ACTED;
            return 0;
        default:
            return 0; /* TLS verification, the body over the cap, our own refusal */
        }
    }
    int s = in->http_status;
    if (s == 429)
        return 1; /* refused before it was processed */
    int transient = s == 503 || s == 504 || (s >= 500 && s < 600 && in->retry_after_s > 0);
    if (transient && !in->idempotent)
        *why = KUBE_RETRY_MAY_HAVE_ACTED;
    return transient && in->idempotent;
}

kube_retry_t kube_retry_decide(const kube_retry_policy_t *p, const kube_retry_in_t *in, uint64_t *rng)
{
    kube_retry_t d = {0, 0, KUBE_RETRY_FINAL};
    if (in->http_status == 401) {
        /* authentication failed before anything was done: safe for every method */
        d.reason = in->refreshed ? KUBE_RETRY_AUTH_REFUSED : KUBE_RETRY_REFRESH;
    } else if (!retryable(in, &d.reason)) {
        return d;
    } else if (in->retries >= p->max_retries) {
        d.reason = KUBE_RETRY_EXHAUSTED;
        return d;
    } else if (in->retry_after_s > 0) {
        int64_t cap = p->retry_after_cap_ns;
        d.delay_ns = in->retry_after_s > cap / NS_PER_SEC ? cap : in->retry_after_s * NS_PER_SEC;
        d.reason = KUBE_RETRY_SERVER_DELAY;
    } else {
        int64_t b = backoff_exponential(p->base_ns, p->cap_ns, (unsigned)in->retries);
        d.delay_ns = backoff_jitter(b, 0.5, rng);
        d.reason = KUBE_RETRY_BACKOFF;
    }
    if (d.reason == KUBE_RETRY_AUTH_REFUSED)
        return d;
    if (in->deadline_ns > 0 && in->now_ns + d.delay_ns >= in->deadline_ns) {
        d.delay_ns = 0;
        d.reason = KUBE_RETRY_DEADLINE;
        return d;
    }
    d.retry = 1;
    return d;
}

int kube_retry_idempotent(const char *method, const char *content_type)
{
    if (!method)
        return 0;
    if (!strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "PUT") || !strcmp(method, "DELETE"))
        return 1;
    return !strcmp(method, "PATCH") && content_type && !strcmp(content_type, "application/apply-patch+yaml");
}

const char *kube_retry_reason_name(kube_retry_reason_t r)
{
    switch (r) {
    case KUBE_RETRY_BACKOFF: return "backoff";
    case KUBE_RETRY_SERVER_DELAY: return "retry-after";
    case KUBE_RETRY_REFRESH: return "refresh";
    case KUBE_RETRY_FINAL: return "final";
    case KUBE_RETRY_MAY_HAVE_ACTED: return "may-have-acted";
    case KUBE_RETRY_AUTH_REFUSED: return "auth-refused";
    case KUBE_RETRY_EXHAUSTED: return "exhausted";
    case KUBE_RETRY_DEADLINE: return "deadline";
    }
    return "unknown";
}

int kube_retry_parse_after(const char *line, size_t len, int64_t *seconds)
{
    if (len <= 12 || strncasecmp(line, "retry-after:", 12) != 0)
        return 0;
    size_t i = 12;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    int64_t v = 0;
    size_t digits = 0;
    while (i < len && line[i] >= '0' && line[i] <= '9' && digits < 9) {
        v = v * 10 + (line[i] - '0');
        i++;
        digits++;
    }
    if (digits == 0)
        return 0;
    *seconds = v;
    return 1;
}
