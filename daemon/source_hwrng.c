/* A hardware RNG device (/dev/hwrng: virtio-rng, TPM, ...) read without blocking. Credited
 * to the kernel only when the kernel's own hwrng thread does not already consume it. */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Devices behind /dev/hwrng vary from excellent to unknown: credit 2 bits a byte. */
#define HWRNG_ENTROPY_PER_BYTE 2.0

/* No state between calls: the assessment's thread reads through it too. */
static ssize_t hwrng_read(struct source *s, uint8_t *buf, size_t n)
{
    ssize_t got = read(s->fd, buf, n);

    if (got < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
    return got;
}

/* The configured credit stays whatever an assessment finds; one at start takes a sample of
 * the device's own (8 KiB, about a second of a virtio-rng) and warns if it is below. */
static const struct source_ops hwrng_ops = {
    .read = hwrng_read,
    .assess = source_assess_by_reading,
    .assessment = source_assessment_by_reading,
};

static bool read_sysfs_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "re");
    bool ok = f && fgets(out, (int)len, f);

    if (f)
        fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return ok;
}

/* The misc device behind /dev/hwrng (rng_core's HWRNG_MINOR), whatever path names it. */
#define HW_RANDOM_MAJOR 10
#define HW_RANDOM_MINOR 183

/* The kernel's hwrng thread reads rng_current and credits it whenever its quality is
 * above zero (rng_core's current_quality; absent on some kernels, then assume it does).
 * It reads only the hw_random device: another device (a USB TRNG's tty, a FIFO from a
 * vendor tool) is never credited by the kernel, so randd may credit it. */
static bool kernel_consumes_hwrng(int fd)
{
    char current[128], quality[32];
    struct stat st;

    if (fstat(fd, &st) == 0 && !(S_ISCHR(st.st_mode) && major(st.st_rdev) == HW_RANDOM_MAJOR &&
                                 minor(st.st_rdev) == HW_RANDOM_MINOR))
        return false;
    if (!read_sysfs_line("/sys/class/misc/hw_random/rng_current", current, sizeof(current)) ||
        !strcmp(current, "none") || !current[0])
        return false;
    if (!read_sysfs_line("/sys/module/rng_core/parameters/current_quality", quality,
                         sizeof(quality)))
        return true;
    return atoi(quality) > 0;
}

int source_hwrng_open(struct source *s, const char *path, char *why, size_t whylen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return -ENODEV;
    }
    source_init(s, "hwrng", &hwrng_ops, HWRNG_ENTROPY_PER_BYTE, 1, !kernel_consumes_hwrng(fd));
    s->noise = true;
    s->fd = fd;
    return 0;
}
