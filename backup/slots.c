/* slots: --slots, parsed and compared (slots.h). */
#include "slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A slot number of s (decimal digits, no sign, no leading zero: as printed) into *slot:
 * the character after it, or NULL when there is none or it is over CN_SLOTS - 1. */
static const char *slot_at(const char *s, int *slot)
{
    long v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9' && v < CN_SLOTS)
        v = v * 10 + (*p++ - '0');
    if (p == s || v >= CN_SLOTS || (*p >= '0' && *p <= '9') || (s[0] == '0' && p - s > 1))
        return NULL;
    *slot = (int)v;
    return p;
}

/* One item "N" or "A-B" at s into *r: the character after it, or NULL. */
static const char *range_at(const char *s, cn_range_t *r)
{
    const char *p = slot_at(s, &r->from);
    r->to = r->from;
    if (p && *p == '-')
        p = slot_at(p + 1, &r->to);
    if (!p || (*p != ',' && *p != '\0') || r->to < r->from)
        return NULL;
    return p;
}

int slots_parse(const char *text, cn_slots_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text) {
        snprintf(err, errlen, "--slots \"\": no slots (a shard's slots: \"0-5460\", \"0-10,20-30\")");
        return -1;
    }
    for (const char *s = text;;) {
        cn_range_t r;
        const char *next = range_at(s, &r);
        if (!next) {
            int n = (int)strcspn(s, ",");
            snprintf(err, errlen, "--slots \"%s\": \"%.*s\" is not a slot N or a range A-B (A <= B) of slots 0 to %d",
                     text, n, s, CN_SLOTS - 1);
            return -1;
        }
        for (int slot = r.from; slot <= r.to; slot++) {
            if (cn_slots_has(out, slot)) {
                snprintf(err, errlen, "--slots \"%s\": slot %d is given twice", text, slot);
                return -1;
            }
            cn_slots_set(out, slot);
        }
        if (*next == '\0')
            return 0;
        s = next + 1;
    }
}

void slots_text(const cn_slots_t *s, char *out, size_t outlen)
{
    cn_range_t r[SLOTS_TEXT_MAX / 2];
    size_t n = cn_slots_ranges(s, 0, CN_SLOTS - 1, 1, r, sizeof r / sizeof r[0]);
    cn_ranges_text(r, n < sizeof r / sizeof r[0] ? n : sizeof r / sizeof r[0], out, outlen);
}

/* The master of the shard of view's myself line: 0 with *master, -1 with err. */
static int shard_master(const cn_view_t *view, const cn_node_t **master, char *err, size_t errlen)
{
    const cn_node_t *me = cn_myself(view);
    if (!me) {
        snprintf(err, errlen, "CLUSTER NODES has no myself line");
        return -1;
    }
    if (me->flags & CN_MASTER) {
        *master = me;
        return 0;
    }
    if (!me->master[0]) {
        snprintf(err, errlen, "this node (%s) is neither a master nor a replica of one: no shard to check --slots of",
                 me->id);
        return -1;
    }
    *master = cn_find(view, me->master);
    if (!*master) {
        snprintf(err, errlen, "this node's master %s is not in its CLUSTER NODES: no shard to check --slots of",
                 me->master);
        return -1;
    }
    return 0;
}

int slots_check(const char *text, size_t len, const cn_slots_t *want, char *err, size_t errlen)
{
    cn_view_t *view = NULL;
    const cn_node_t *master = NULL;
    cn_slots_t have;
    char have_text[SLOTS_TEXT_MAX], want_text[SLOTS_TEXT_MAX], who[80];
    int rc = -1;
    if (cn_parse(text, len, &view, err, errlen) != 0 || shard_master(view, &master, err, errlen) != 0)
        goto out;
    memset(&have, 0, sizeof have);
    cn_slots_add_node(&have, master);
    if (memcmp(&have, want, sizeof have) == 0) {
        rc = 0;
        goto out;
    }
    slots_text(&have, have_text, sizeof have_text);
    slots_text(want, want_text, sizeof want_text);
    /* A node that met no other knows no address of its own: its id names it then. */
    if (master->ip[0])
        snprintf(who, sizeof who, "%s:%d", master->ip, master->port);
    else
        snprintf(who, sizeof who, "%s", master->id);
    snprintf(err, errlen,
             "the shard's master %s serves %s, not %s (--slots): the slots moved since the backup was planned; "
             "the next backup tries again",
             who, have_text[0] ? have_text : "no slots", want_text);
out:
    cn_view_destroy(&view);
    return rc;
}
