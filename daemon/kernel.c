/* RNDADDENTROPY and RNDRESEEDCRNG on /dev/random, and the kernel's readiness. Without
 * CAP_SYS_ADMIN both ioctls fail with EPERM: the feed is then switched off once, loudly,
 * and the daemon keeps serving. */
#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "log.h"

bool kernel_probe_initialised(void)
{
    uint8_t byte;

    return getrandom(&byte, 1, GRND_NONBLOCK) == 1;
}

void kernel_init(struct kernel *k, bool enabled, bool (*probe)(void), uint64_t now_ns)
{
    *k = (struct kernel){ .fd = -1, .is_initialised = probe ? probe : kernel_probe_initialised,
                          .start_ns = now_ns };
    if (!enabled) {
        snprintf(k->off_reason, sizeof(k->off_reason), "kernel_topup = no");
        return;
    }
    k->fd = open("/dev/random", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (k->fd < 0) {
        snprintf(k->off_reason, sizeof(k->off_reason), "/dev/random: %s", strerror(errno));
        log_warning("kernel feed off: %s", k->off_reason);
        return;
    }
    k->enabled = true;
    k->initialised = k->is_initialised();
}

void kernel_fini(struct kernel *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
}

bool kernel_check_initialised(struct kernel *k, uint64_t now_ns)
{
    if (k->initialised || !k->is_initialised())
        return false;
    k->initialised = true;
    k->init_seen = true;
    k->init_after_ns = now_ns - k->start_ns;
    log_notice("kernel random generator initialised %.3f s after randd started",
               (double)k->init_after_ns / 1e9);
    return true;
}

static void switch_off(struct kernel *k, int err)
{
    k->enabled = false;
    if (err == EPERM) {
        snprintf(k->off_reason, sizeof(k->off_reason),
                 "no CAP_SYS_ADMIN: RNDADDENTROPY refused (EPERM)");
        log_err("kernel feed off: RNDADDENTROPY needs CAP_SYS_ADMIN. Run randd as root, or "
                "keep CAP_SYS_ADMIN in the unit's CapabilityBoundingSet and "
                "AmbientCapabilities; without it the kernel is never topped up.");
    } else {
        snprintf(k->off_reason, sizeof(k->off_reason), "RNDADDENTROPY: %s", strerror(err));
        log_err("kernel feed off: %s", k->off_reason);
    }
}

static int fail(struct kernel *k, const char *what, int err)
{
    snprintf(k->last_error, sizeof(k->last_error), "%s: %s", what, strerror(err));
    return -err;
}

int kernel_feed(struct kernel *k, struct pool *p, uint64_t now_ns)
{
    struct {
        struct rand_pool_info info;
        uint8_t data[POOL_KERNEL_BYTES];
    } req;
    unsigned bits;
    int rc;

    if (!k->enabled)
        return -ENOTCONN;
    kernel_check_initialised(k, now_ns);
    bits = pool_take_kernel_material(p, req.data, now_ns);
    if (bits == 0 && pool_kernel_pending(p))
        return -EINPROGRESS;         /* jitter is at it; the caller feeds when it is ready */
    if (bits == 0)
        return fail(k, "no fresh material from a kernel-creditable source", ENODATA);
    req.info.entropy_count = (int)bits;
    req.info.buf_size = sizeof(req.data);
    rc = ioctl(k->fd, RNDADDENTROPY, &req);
    OPENSSL_cleanse(&req, sizeof(req));
    if (rc < 0) {
        int err = errno;

        if (err == EPERM || err == EINVAL)
            switch_off(k, err);
        return fail(k, "RNDADDENTROPY", err);
    }
    k->topups++;
    k->bits_offered += bits;
    /* Before initialisation the credit itself counts; after it, only a reseed makes the
     * new material take effect now rather than at the kernel's next scheduled reseed. */
    if (k->initialised) {
        if (ioctl(k->fd, RNDRESEEDCRNG) < 0)
            return fail(k, "RNDRESEEDCRNG", errno);
        k->reseeds++;
    }
    return 0;
}
