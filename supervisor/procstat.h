/* procstat: the per-process metrics the supervisor exports for itself and each child,
 * read from /proc/<pid>/stat, with the names and types of Prometheus' process collector
 * (client_golang): process_resident_memory_bytes is a gauge, process_cpu_seconds_total a
 * counter (it only grows while the process lives; rate() needs the counter type).
 */
#ifndef RDC_SUPERVISOR_PROCSTAT_H
#define RDC_SUPERVISOR_PROCSTAT_H

#include "metrics.h"

#include <sys/types.h>

/* Register (or find) the two families, labelled by "child", in reg. Either pointer is
 * NULL when out of memory or when the name is taken by another type. */
void procstat_families(metrics_registry_t *reg, metric_family_t **rss,
                       metric_family_t **cpu);

/* Resident memory (bytes) and user + system CPU time (seconds) of pid. Returns 0, or -1
 * when the process is gone or its stat file cannot be parsed (outputs unchanged). */
int procstat_read(pid_t pid, double *rss_bytes, double *cpu_s);

#endif
