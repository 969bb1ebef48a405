/* libFuzzer target for the kubeconfig parser: any input must load or fail with a message,
 * never crash, leak or run away. Files named in the input are resolved against the working
 * directory (only regular files are read, and nothing is executed at load time).
 *
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Icommon \
 *       tests/fuzz/fuzz_kube_config.c common/kube_config*.c -lyaml -ljson-c -lcrypto
 */
#include "kube_config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kube_config_t *cfg = NULL;
    char err[512];

    err[0] = '\0';
    int rc = kube_config_load_buffer((const char *)data, size, "fuzz.yaml", NULL, &cfg, err,
                                     sizeof err);
    /* The contract: success gives a configuration, failure a one-line message. */
    if (rc == 0) {
        if (cfg == NULL || kube_config_rest(cfg)->server == NULL)
            __builtin_trap();
    } else if (cfg != NULL || err[0] == '\0' || memchr(err, '\n', strlen(err))) {
        __builtin_trap();
    }
    kube_config_destroy(&cfg);
    return 0;
}
