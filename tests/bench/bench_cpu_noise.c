/* bench-cpu-noise: the CPU noise instruction's bytes per second (RDSEED, RNDRRS, DARN or the
 * TRNG) through randd's source (retries, health tests) against a bare loop of it, in one run.
 * Skips when the CPU has none. */
#include <stdio.h>
#include <time.h>

#include <openssl/crypto.h>

#include "cpu_noise.h"
#include "source.h"

#define SECONDS 2.0

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double bare_loop_rate(void)
{
    uint64_t words = 0, value, sink = 0;
    double start = now_s(), elapsed;

    do {
        for (int i = 0; i < 1024; i++) {
            words += cpu_noise_step(&value);
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

    if (source_cpu_open(&s, why, sizeof(why)) < 0) {
        printf("bench-cpu-noise: skipped: %s\n", why);
        return 0;
    }
    bare = bare_loop_rate();
    harvested = harvest_rate(&s);
    printf("bench-cpu-noise: bare %-6s loop     %8.2f MB/s\n", s.name, bare / 1e6);
    printf("bench-cpu-noise: randd %-6s source %8.2f MB/s (health-tested), %.2fx the bare loop\n",
           s.name, harvested / 1e6, harvested / bare);
    printf("bench-cpu-noise: %llu health failures, %llu empty rounds\n",
           (unsigned long long)s.health.failures, (unsigned long long)s.empty_reads);
    return 0;
}
