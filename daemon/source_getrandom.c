/* The kernel's own generator through getrandom(), never blocking. Its output is credited to
 * our generator only: feeding the kernel its own output and crediting it would be circular. */
#include "source.h"

#include <errno.h>
#include <sys/random.h>

/* The kernel CRNG is a full-entropy source once initialised; until then getrandom with
 * GRND_NONBLOCK fails with EAGAIN and gives nothing. */
#define GETRANDOM_ENTROPY_PER_BYTE 8.0

static ssize_t getrandom_read(struct source *s, uint8_t *buf, size_t n)
{
    ssize_t got = getrandom(buf, n, GRND_NONBLOCK);

    (void)s;
    if (got < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
    return got;
}

/* Not assessed: its output is a CSPRNG's, which passes any statistical estimator whether or
 * not the kernel had entropy, and 8192 samples of ideal bytes assess near 6 bits, below the 8
 * credited: a warning that always fires would say nothing. */
static const struct source_ops getrandom_ops = { .read = getrandom_read };

int source_getrandom_open(struct source *s, char *why, size_t whylen)
{
    (void)why;
    (void)whylen;
    source_init(s, "getrandom", &getrandom_ops, GETRANDOM_ENTROPY_PER_BYTE, 1, false);
    return 0;
}
