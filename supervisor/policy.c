#include "policy.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

int64_t policy_on_exit(policy_restart_t *p, int64_t started_ns, int64_t now_ns)
{
    if (now_ns - started_ns >= POLICY_STABLE_NS)
        p->exits_in_a_row = 0;
    unsigned shift = p->exits_in_a_row;
    p->exits_in_a_row++;
    p->restarts_total++;
    int64_t d = POLICY_RESTART_BASE_NS;
    while (shift-- > 0 && d < POLICY_RESTART_CAP_NS)
        d *= 2;
    return d > POLICY_RESTART_CAP_NS ? POLICY_RESTART_CAP_NS : d;
}

int policy_crashlooping(const policy_restart_t *p)
{
    return p->exits_in_a_row >= POLICY_CRASHLOOP_EXITS;
}

char *policy_describe_status(int status, char *out, unsigned long len)
{
    if (WIFEXITED(status)) {
        snprintf(out, len, "exited with code %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *abbrev = sigabbrev_np(sig);
        snprintf(out, len, "killed by signal %d (SIG%s)%s", sig, abbrev ? abbrev : "?",
                 WCOREDUMP(status) ? ", core dumped" : "");
    } else {
        snprintf(out, len, "stopped with status 0x%x", (unsigned)status);
    }
    return out;
}
