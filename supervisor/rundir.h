/* rundir: the supervisor's runtime directory and its lock file (s6's).
 *
 * One supervisor per runtime directory: it holds an exclusive flock(2) on
 * <dir>/supervisor.lock for its whole life, with its pid written in the file for the
 * messages of others. The file is never unlinked (unlinking a lock file lets two
 * processes lock two different inodes of the same name).
 *
 * When --runtime-dir is given, that directory is the only choice and a held lock is an
 * error naming the holder. When it is not, the default directory (opts_default_runtime_dir)
 * is taken if free, else the first free of "<default>-2" ... "<default>-16", so a second
 * operator of the same user starts instead of failing. The caller logs the choice: tools
 * such as `supervisor ctl` need --runtime-dir to reach a supervisor on a fallback.
 */
#ifndef RDC_SUPERVISOR_RUNDIR_H
#define RDC_SUPERVISOR_RUNDIR_H

#include <stddef.h>

#define RUNDIR_CANDIDATES 16
#define RUNDIR_LOCK_NAME "supervisor.lock"

/* The i-th candidate for the default directory base: base itself for i = 0, else
 * "<base>-<i+1>". Returns 0, or -1 when out is too small (out then holds no path). */
int rundir_candidate(const char *base, int i, char *out, size_t outlen);

/* Resolve, create (daemon_runtime_dir's rules: ours, mode 0700, no symbolic link) and lock
 * a runtime directory: explicit_dir as --runtime-dir, or NULL/"" for the default and its
 * fallbacks. Returns the lock's descriptor (close-on-exec; closing it releases the lock)
 * with the directory in out and *fallback 1 when it is not the first candidate; or -1 with
 * err saying which directory is wrong or which supervisors (pids) hold them, and what to
 * pass instead. A candidate that is refused for any other reason than its lock ends the
 * search: a directory that is not ours is a problem to report, not to route around. */
int rundir_acquire(const char *explicit_dir, char *out, size_t outlen, int *fallback,
                   char *err, size_t errlen);

/* The pid that the holder of dir's lock wrote into it; 0 when none can be read. */
long rundir_holder(const char *dir);

#endif
