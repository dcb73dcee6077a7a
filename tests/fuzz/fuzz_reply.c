/* libFuzzer: librandd's reply decoder fed arbitrary daemon replies over a socketpair:
 * every call must return 0 or a negative code, never crash, hang or overrun. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t r[2] = { 0x01, 0x00 };
    uint8_t out[512];
    randd_handle *h;
    char *json = NULL;
    int sv[2], rc;

    if (size < 1 || size > 60000 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return 0;
    /* The first byte picks the call (and a PRIME's size, 16..4096 bits); the rest is what
     * the "daemon" says, then EOF. */
    if (write(sv[1], data + 1, size - 1) != (ssize_t)(size - 1)) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    /* Half-close: the client sees EOF after the reply, yet its request can still land. */
    shutdown(sv[1], SHUT_WR);
    if (randd_handle_from_fd(&h, sv[0]) < 0) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    randd_set_timeout(h, 1000);
    switch (data[0] % 5) {
    case 0: rc = randd_bytes(h, out, 1 + data[0] % 64); break;
    case 1: rc = randd_range(h, r, sizeof(r), out, 1 + data[0] % 100); break;
    case 2: rc = randd_status(h, &json); break;
    case 3: rc = randd_add_entropy(h, "x", 1, 8); break;
    default: rc = randd_prime(h, 16 + data[0] / 5 * 80, out); break;
    }
    if (rc > 0 && (data[0] % 5 != 2 || !json || strlen(json) != (size_t)rc))
        abort();
    free(json);
    randd_strerror(rc);
    randd_close(h);
    close(sv[1]);
    return 0;
}
