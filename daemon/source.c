/* What every source shares: set-up, the harvest step (read, health-test, quarantine and
 * re-admission), and close. Per-source reading is in source_<name>.c. */
#include "source.h"

#include <errno.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "log.h"

void source_init(struct source *s, const char *name, const struct source_ops *ops,
                 double entropy_per_byte, unsigned sample_bytes, bool kernel_creditable)
{
    *s = (struct source){
        .name = name,
        .ops = ops,
        .entropy_per_byte = entropy_per_byte,
        .sample_bytes = sample_bytes,
        .kernel_creditable = kernel_creditable,
        .fd = -1,
    };
    health_init(&s->health, sample_bytes, entropy_per_byte * sample_bytes);
}

bool source_healthy(const struct source *s)
{
    return s->health.state == HEALTH_HEALTHY;
}

ssize_t source_harvest(struct source *s, uint8_t *buf, size_t n, uint64_t now_ns)
{
    enum health_state before = s->health.state;
    ssize_t got;

    if (before == HEALTH_QUARANTINED) {
        if (!health_retry_due(&s->health, now_ns))
            return 0;
        log_info("source %s: retrying after quarantine (start-up test)", s->name);
        health_readmit(&s->health, now_ns);
        before = s->health.state;
    }
    got = s->ops->read(s, buf, n);
    if (got < 0) {
        s->read_errors++;
        s->last_errno = (int)-got;
        return got;
    }
    if (got == 0) {
        s->empty_reads++;
        return 0;
    }
    s->bytes_read += (uint64_t)got;
    health_feed_buffer(&s->health, buf, (size_t)got, now_ns);
    switch (s->health.state) {
    case HEALTH_QUARANTINED:
        log_warning("source %s: quarantined: %s", s->name, s->health.reason);
        break;
    case HEALTH_HEALTHY:
        if (before == HEALTH_HEALTHY) {
            s->bytes_used += (uint64_t)got;
            return got;
        }
        log_info("source %s: start-up test passed, in use", s->name);
        break;
    default:
        break;
    }
    OPENSSL_cleanse(buf, (size_t)got);   /* tested but not trusted: never used */
    return 0;
}

void source_close(struct source *s)
{
    if (s->ops && s->ops->close)
        s->ops->close(s);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}
