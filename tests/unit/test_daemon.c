/* Unit tests of common/daemon's signal reading: the signalfd every daemon's loop watches. */
#include "cu_table.h"
#include "daemon.h"

#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* daemon_stop_requested reads every pending signal and counts the stop requests among
 * them (a daemon that drains on the first takes a second as "now"); the others are read
 * and not counted. */
static void test_stop_requests_counted(void)
{
    char err[256] = "";
    int fd = daemon_signalfd(err, sizeof(err));
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(daemon_stop_requested(fd), 0); /* nothing pending */
    raise(SIGHUP);
    CU_ASSERT_EQUAL(daemon_stop_requested(fd), 0);
    CU_ASSERT_EQUAL(daemon_read_signal(fd), 0); /* the SIGHUP was read all the same */
    raise(SIGTERM);
    CU_ASSERT_EQUAL(daemon_stop_requested(fd), 1);
    raise(SIGTERM);
    raise(SIGINT);
    raise(SIGHUP);
    CU_ASSERT_EQUAL(daemon_stop_requested(fd), 2);
    CU_ASSERT_EQUAL(daemon_read_signal(fd), 0);
    close(fd);
    daemon_reset_signals();
}

/* The heap is trimmed once per idle spell, after DAEMON_TRIM_IDLE_NS of it; and, freed
 * memory being free, it is given back: RSS after a burst of small frees falls. */
static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    if (f)
        fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_trim_once_per_idle_spell(void)
{
    const int64_t s = 1000000000;
    daemon_trim_t t = {0};
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 1, 10 * s), 0); /* busy */
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 0, 11 * s), 0); /* idle from now */
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 0, 11 * s + DAEMON_TRIM_IDLE_NS - 1), 0);
    /* A burst of small blocks (as parsed JSON is), freed but the last: the heap's top is
     * pinned, so only a trim gives the middle back. */
    enum { N = 40000 };
    static void *blocks[N];
    for (int i = 0; i < N; i++)
        blocks[i] = calloc(1, 1000);
    long full = rss_kb();
    for (int i = 0; i < N - 1; i++)
        free(blocks[i]);
    long freed = rss_kb();
#ifdef __GLIBC__
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 0, 11 * s + DAEMON_TRIM_IDLE_NS), 1);
    long trimmed = rss_kb();
#ifndef __SANITIZE_ADDRESS__ /* ASan's allocator is not glibc's: nothing of it to trim */
    CU_ASSERT(full > 0 && trimmed < freed - 20000); /* ~40 MB were free; most go back */
    if (!(trimmed < freed - 20000))
        fprintf(stderr, "rss: full %ld, freed %ld, trimmed %ld kB\n", full, freed, trimmed);
#else
    (void)full, (void)freed, (void)trimmed;
#endif
#endif
    free(blocks[N - 1]);
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 0, 20 * s), 0); /* the same spell: done */
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 1, 21 * s), 0);
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 0, 22 * s), 0);
#ifdef __GLIBC__
    CU_ASSERT_EQUAL(daemon_trim_idle(&t, 0, 22 * s + DAEMON_TRIM_IDLE_NS), 1); /* a new spell */
#endif
}

static const cu_entry_t tests[] = {
    CU_SUITE("daemon"),
    {"signals: stop requests counted, the others read", test_stop_requests_counted},
    {"the heap trimmed once per idle spell", test_trim_once_per_idle_spell},
};

CU_MAIN(tests)
