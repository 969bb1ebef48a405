/* kube_config_err: the one error formatter the kubeconfig files share. It is a leaf (it
 * calls none of them), so kube_config.c, kube_config_yaml.c, kube_config_exec.c and
 * kube_config_transport.c depend on it and kube_config.c on the others, never in a circle. */
#include "kube_config_internal.h"

#include <stdarg.h>
#include <stdio.h>

void kcfg_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *p = err; *p; p++) /* one line, whatever the files contained */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = (*p == '\n' || *p == '\r' || *p == '\t') ? ' ' : '?';
}
