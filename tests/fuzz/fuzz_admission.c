/* libFuzzer target for the admission webhooks' core (admission_review) and the shared
 * RedisCluster rules (rdc_spec).
 *
 * The first input byte chooses a mode; the rest is the payload:
 *   mode & 3 == 0   the payload is the whole request body (raw AdmissionReview bytes);
 *   mode & 3 == 1   the payload is the spec of a RedisCluster in a well-formed CREATE
 *                   review, so that the rules themselves are explored; the verdict must
 *                   agree with workerd's plan() (admitted <=> plan does not fail it);
 *   mode & 3 == 2   the payload is the old spec of an UPDATE to a fixed valid spec;
 *   mode & 3 == 3   the payload is the new spec of an UPDATE from a fixed valid spec.
 * Bit 2 picks the mutating webhook instead of the validating one.
 *
 * Checks, beyond the sanitizers: an answer always comes back, it is JSON with kind
 * AdmissionReview and a response with a string uid and a boolean allowed; a bad request
 * is refused with code 400; a refusal has a message; a patch is base64 of a JSON array of
 * "add" operations under /spec whose result validates like the defaults do; the same
 * input gives the same answer twice.
 *
 * Build (scripts/fuzz.sh does this): clang -g -O1 -std=c11 -D_GNU_SOURCE \
 *   -fsanitize=fuzzer,address,undefined -Icommon -Iwebhookd -Iworkerd \
 *   tests/fuzz/fuzz_admission.c common/[a-z]*.c webhookd/[a-v]*.c workerd/[a-v]*.c \
 *   -lcurl -ljson-c -lyaml -lssl -lcrypto -lzmq -lmicrohttpd -levent -levent_openssl -lm -lpthread
 */
#include "admission.h"
#include "buf.h"
#include "plan.h"
#include "rdc_spec.h"
#define FUZZ_TARGET "fuzz_admission"
#include "fuzz_review.h"

#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VALID_SPEC "{\"size\":3,\"image\":\"redis\",\"storage\":{\"size\":\"1Gi\"}}"

/* A well-formed review around the payload (JSON text, used as is: it may be anything). */
static void wrap(buf_t *b, const char *op, const char *spec, size_t spec_len, const char *old_spec,
                 size_t old_len)
{
    buf_printf(b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
                  "\"uid\":\"f-1\",\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1alpha1\","
                  "\"kind\":\"RedisCluster\"},\"operation\":\"%s\",\"namespace\":\"ns\",\"name\":\"cache\","
                  "\"object\":{\"metadata\":{\"name\":\"cache\",\"namespace\":\"ns\",\"uid\":\"u-1\"},\"spec\":",
               op);
    buf_append(b, spec, spec_len);
    buf_puts(b, "}");
    if (old_spec) {
        buf_puts(b, ",\"oldObject\":{\"metadata\":{\"name\":\"cache\",\"namespace\":\"ns\",\"uid\":\"u-1\"},\"spec\":");
        buf_append(b, old_spec, old_len);
        buf_puts(b, "}");
    }
    buf_puts(b, "}}");
}

/* Decode and check a patch; returns the ops (caller puts). */
static json_object *check_patch(const char *p64, const char *out)
{
    size_t n = strlen(p64);
    unsigned char *raw = malloc(n + 1);
    int len = EVP_DecodeBlock(raw, (const unsigned char *)p64, (int)n);
    check(len >= 0, "patch is not base64", out);
    while (len > 0 && raw[len - 1] == '\0')
        len--;
    raw[len] = '\0';
    json_object *ops = json_tokener_parse((const char *)raw);
    free(raw);
    check(ops && json_object_is_type(ops, json_type_array) && json_object_array_length(ops) > 0,
          "patch is not a non-empty JSON array", out);
    for (size_t i = 0; i < json_object_array_length(ops); i++) {
        json_object *op = json_object_array_get_idx(ops, i);
        const char *kind = json_object_get_string(get(op, "op")), *path = json_object_get_string(get(op, "path"));
        check(kind && !strcmp(kind, "add") && path && !strncmp(path, "/spec/", 6) && get(op, "value"),
              "patch op is not an add under /spec", out);
    }
    return ops;
}

/* Validate-after-mutate: a spec that was only missing defaults validates once defaulted. */
static void check_defaults_validate(const uint8_t *spec, size_t len)
{
    json_tokener *tok = json_tokener_new();
    json_object *s = json_tokener_parse_ex(tok, (const char *)spec, (int)len);
    json_tokener_free(tok);
    if (!s)
        return;
    json_object *rc = json_object_new_object(), *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string("cache"));
    json_object_object_add(rc, "metadata", meta);
    json_object_object_add(rc, "spec", s);
    rdc_field_errors_t *before = rdc_field_errors_new(), *after = rdc_field_errors_new();
    size_t nb = rdc_spec_validate(rc, before);
    json_object *defaulted = rdc_spec_defaulted(rc);
    if (defaulted) {
        json_object_object_add(rc, "spec", defaulted);
        size_t na = rdc_spec_validate(rc, after);
        /* Defaults only fill absent values: they never add a problem. */
        check(na <= nb, "defaults made a spec invalid", json_object_to_json_string(rc));
        json_object *ops = json_object_new_array();
        check(rdc_spec_default_ops(rc, ops) == 0, "defaults are not idempotent", json_object_to_json_string(rc));
        json_object_put(ops);
    }
    rdc_field_errors_destroy(&before);
    rdc_field_errors_destroy(&after);
    json_object_put(rc);
}

/* The webhook admits a CREATE exactly when plan() does not fail the spec. */
static void check_agrees_with_plan(const uint8_t *spec, size_t len, int allowed, const char *out)
{
    json_tokener *tok = json_tokener_new_ex(ADMISSION_MAX_DEPTH);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *s = json_tokener_parse_ex(tok, (const char *)spec, (int)len);
    int complete = s && json_tokener_get_error(tok) == json_tokener_success &&
                   json_tokener_get_parse_end(tok) == len;
    json_tokener_free(tok);
    if (!complete) { /* the review itself was malformed: nothing to compare */
        json_object_put(s);
        return;
    }
    json_object *rc = json_object_new_object(), *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string("cache"));
    json_object_object_add(meta, "namespace", json_object_new_string("ns"));
    json_object_object_add(meta, "uid", json_object_new_string("u-1"));
    json_object_object_add(rc, "metadata", meta);
    json_object_object_add(rc, "spec", s);
    plan_t *p = plan_compute(rc, NULL, NULL, NULL, INT64_C(1714564800) * 1000000000);
    if (p) {
        int plan_ok = strcmp(plan_phase(p), "Failed") != 0;
        check(plan_ok == allowed, allowed ? "webhook admits what plan() fails" : "webhook refuses what plan() accepts",
              out);
        plan_destroy(&p);
    }
    json_object_put(rc);
}

/* admission_review as a fuzz_review_fn; arg: the admission_kind_t. */
static int review(const char *body, size_t len, char **out, void *outcome, void *arg)
{
    return admission_review(body, len, *(const admission_kind_t *)arg, out, outcome);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in;
    if (fuzz_input(data, size, &in))
        return 0;
    admission_kind_t kind = (data[0] & 4) ? ADMISSION_MUTATE : ADMISSION_VALIDATE;
    if (in.mode == 1)
        wrap(&in.body, "CREATE", in.payload, in.plen, NULL, 0);
    else if (in.mode == 2)
        wrap(&in.body, "UPDATE", VALID_SPEC, strlen(VALID_SPEC), in.payload, in.plen);
    else if (in.mode == 3)
        wrap(&in.body, "UPDATE", in.payload, in.plen, VALID_SPEC, strlen(VALID_SPEC));

    char *out;
    admission_outcome_t o;
    int rc = review_twice(review, &kind, &in.body, &out, &o);
    if (rc < 0)
        return 0;

    json_object *root = json_tokener_parse(out);
    check(root != NULL, "answer is not JSON", out);
    json_object *kind_v = get(root, "kind"), *resp = get(root, "response");
    check(kind_v && !strcmp(json_object_get_string(kind_v), "AdmissionReview"), "answer is not an AdmissionReview",
          out);
    check(resp && json_object_is_type(get(resp, "uid"), json_type_string), "answer has no response.uid", out);
    json_object *allowed_v = get(resp, "allowed");
    check(allowed_v && json_object_is_type(allowed_v, json_type_boolean), "answer has no response.allowed", out);
    int allowed = json_object_get_boolean(allowed_v);
    check(allowed == o.allowed, "outcome disagrees with the answer", out);
    json_object *status = get(resp, "status");
    if (rc == 1)
        check(!allowed && json_object_get_int(get(status, "code")) == 400, "bad request not refused with 400", out);
    if (!allowed) {
        const char *msg = json_object_get_string(get(status, "message"));
        check(msg && *msg, "refusal without a message", out);
        check(strlen(msg) < 8192, "refusal message unbounded", out);
    }
    json_object *patch = get(resp, "patch");
    if (patch) {
        check(allowed && kind == ADMISSION_MUTATE, "patch on a refusal or from the validator", out);
        json_object_put(check_patch(json_object_get_string(patch), out));
    }
    json_object_put(root);

    if (in.mode == 1 && kind == ADMISSION_VALIDATE)
        check_agrees_with_plan(data + 1, in.plen, allowed, out);
    if (in.mode == 1 && kind == ADMISSION_MUTATE)
        check_defaults_validate(data + 1, in.plen);
    free(out);
    buf_free(&in.body);
    return 0;
}
