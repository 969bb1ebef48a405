#include "procstat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void procstat_families(metrics_registry_t *reg, metric_family_t **rss, metric_family_t **cpu)
{
    *rss = metrics_gauge(reg, "process_resident_memory_bytes", "Resident memory size in bytes.",
                         "child");
    *cpu = metrics_counter(reg, "process_cpu_seconds_total",
                           "Total user and system CPU time spent in seconds.", "child");
}

int procstat_read(pid_t pid, double *rss_bytes, double *cpu_s)
{
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    /* Fields after the command name, which is in parentheses and may hold spaces. */
    char *p = strrchr(text, ')');
    if (!p || p[1] != ' ')
        return -1;
    p += 2;
    long ticks = sysconf(_SC_CLK_TCK);
    unsigned long long utime = 0, stime = 0;
    long long rss_pages = 0;
    for (int field = 3; *p && field <= 24; field++) {
        char *end = NULL;
        if (field == 14)
            utime = strtoull(p, &end, 10);
        else if (field == 15)
            stime = strtoull(p, &end, 10);
        else if (field == 24)
            rss_pages = strtoll(p, &end, 10);
        p = strchr(p, ' ');
        if (!p)
            break;
        p++;
    }
    *cpu_s = (double)(utime + stime) / (double)(ticks > 0 ? ticks : 100);
    *rss_bytes = (double)rss_pages * (double)sysconf(_SC_PAGESIZE);
    return 0;
}

