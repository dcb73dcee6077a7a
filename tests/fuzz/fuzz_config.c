/* libFuzzer: the config parser on arbitrary files; a failed parse must leave the config
 * untouched and say where, a successful one must stay within every key's limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct config c, before;
    char err[512] = "";
    FILE *f;

    if (size == 0)
        return 0;
    f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    config_defaults(&c);
    before = c;
    if (config_parse(&c, "fuzz.conf", f, err, sizeof(err)) < 0) {
        if (memcmp(&c, &before, sizeof(c)) != 0 || strncmp(err, "fuzz.conf:", 10) != 0)
            abort();
    } else if (c.reseed_interval < 1 || c.reseed_interval > 86400 ||
               c.reseed_bytes < (1u << 20) || c.max_clients < 1 || c.socket_mode > 0777 ||
               c.cipher > RANDD_STREAM_AES256CTR ||
               (c.cipher == RANDD_STREAM_AES256CTR && !randd_crypto_has_hardware_aes()) ||
               c.socket[0] != '/' || !memchr(c.socket, '\0', sizeof(c.socket))) {
        abort();
    }
    fclose(f);
    return 0;
}
