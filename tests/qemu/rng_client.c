/* check-vmgenid's in-process generator (tests/qemu/check-vmgenid): a client of librandd that
 * holds one randd_rng across a VM snapshot. For each line on stdin it prints 32 bytes of the
 * generator's output in hex, where its keystream had reached and where its last seed came
 * from; two clones restored from one snapshot hold the same generator state, so they print
 * the same bytes unless the generator noticed the new VM generation and reseeded. */
#include <stdio.h>
#include <string.h>

#include "randd.h"

int main(void)
{
    static const char *const from[] = { "unseeded", "daemon", "getrandom" };
    struct randd_rng_options opt = { .flags = 0 };
    unsigned char buf[32];
    char line[64];
    randd_rng *rng;
    int rc, src;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if ((rc = randd_rng_new(&rng, &opt)) < 0) {
        printf("rng-client: randd_rng_new: %s\n", strerror(-rc));
        return 1;
    }
    printf("rng-client: seeded from %s\n", from[randd_rng_seed_source(rng)]);
    while (fgets(line, sizeof(line), stdin)) {
        if ((rc = randd_rng_bytes(rng, buf, sizeof(buf))) < 0) {
            printf("rng-client: randd_rng_bytes: %s\n", strerror(-rc));
            continue;
        }
        src = randd_rng_seed_source(rng);
        printf("rng-client: ");
        for (size_t i = 0; i < sizeof(buf); i++)
            printf("%02x", buf[i]);
        printf(" seed from %s\n", src >= 0 && src <= 2 ? from[src] : "?");
    }
    randd_rng_free(rng);
    return 0;
}
