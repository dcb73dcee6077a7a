/* bench-rdseed: RDSEED bytes per second through randd's source (retries, health tests)
 * against a bare RDSEED loop, in one run. Skips when the CPU has no RDSEED. */
#include <stdio.h>
#include <time.h>

#include <openssl/crypto.h>

#include "source.h"

#define SECONDS 2.0

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double bare_rdseed_rate(void)
{
    uint64_t words = 0, value, sink = 0;
    double start = now_s(), elapsed;

    do {
        for (int i = 0; i < 1024; i++) {
            unsigned char ok;

            __asm__ volatile("rdseed %0; setc %1" : "=r"(value), "=qm"(ok) : : "cc");
            words += ok;
            sink ^= value;
        }
    } while ((elapsed = now_s() - start) < SECONDS);
    OPENSSL_cleanse(&sink, sizeof(sink));
    return 8.0 * (double)words / elapsed;
}

static double harvest_rate(struct source *s)
{
    uint8_t buf[512];
    uint64_t bytes = 0;
    double start = now_s(), elapsed;

    do {
        ssize_t got = source_harvest(s, buf, sizeof(buf), 1);

        bytes += got > 0 ? (uint64_t)got : 0;
    } while ((elapsed = now_s() - start) < SECONDS);
    OPENSSL_cleanse(buf, sizeof(buf));
    return (double)bytes / elapsed;
}

int main(void)
{
    struct source s;
    char why[256];
    double bare, harvested;

    if (source_rdseed_open(&s, why, sizeof(why)) < 0) {
        printf("bench-rdseed: skipped: %s\n", why);
        return 0;
    }
    bare = bare_rdseed_rate();
    harvested = harvest_rate(&s);
    printf("bench-rdseed: bare RDSEED loop      %8.2f MB/s\n", bare / 1e6);
    printf("bench-rdseed: randd rdseed source   %8.2f MB/s (health-tested), %.2fx the bare loop\n",
           harvested / 1e6, harvested / bare);
    printf("bench-rdseed: %llu health failures, %llu empty rounds\n",
           (unsigned long long)s.health.failures, (unsigned long long)s.empty_reads);
    return 0;
}
