/* Unit tests of common/daemon's signal reading: the signalfd every daemon's loop watches. */
#include "cu_table.h"
#include "daemon.h"

#include <CUnit/CUnit.h>
#include <signal.h>
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

static const cu_entry_t tests[] = {
    CU_SUITE("daemon"),
    {"signals: stop requests counted, the others read", test_stop_requests_counted},
};

CU_MAIN(tests)
