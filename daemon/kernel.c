/* RNDADDENTROPY and RNDRESEEDCRNG on /dev/random, and the kernel's readiness. Without
 * CAP_SYS_ADMIN both ioctls fail with EPERM: the feed is then switched off once, loudly,
 * and the daemon keeps serving.
 *
 * Sections: the privileged thread, the feed. */
#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "log.h"

/* --- the privileged thread -------------------------------------------------------------
 * CAP_SYS_ADMIN lifts more than these ioctls' EPERM: the kernel's limit on descriptors in
 * flight (too_many_unix_fds), for one. A thread that serves clients must live within such
 * limits, so the capability belongs to a thread that does nothing but the two ioctls, handed
 * to it one at a time by the main thread, which waits for the result: the feed behaves as
 * if the ioctl were its own, and the material never leaves the caller's stack. */

struct kernel_thread {
    pthread_t id;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int fd;
    unsigned long request;           /* the ioctl to make; 0: none asked */
    void *arg;
    int result;                      /* its return: 0 or a negative errno */
    bool stop;
};

static void *ioctl_thread(void *arg)
{
    struct kernel_thread *t = arg;

    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->request && !t->stop)
            pthread_cond_wait(&t->cond, &t->lock);
        if (t->stop)
            break;
        t->result = ioctl(t->fd, t->request, t->arg) < 0 ? -errno : 0;
        t->request = 0;
        pthread_cond_broadcast(&t->cond);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* ioctl(request, arg) on /dev/random, made by the feed's thread once it runs. Returns 0 or a
 * negative errno. */
static int rnd_ioctl(struct kernel *k, unsigned long request, void *arg)
{
    struct kernel_thread *t = k->thread;
    int rc;

    if (!t)
        return ioctl(k->fd, request, arg) < 0 ? -errno : 0;
    pthread_mutex_lock(&t->lock);
    t->request = request;
    t->arg = arg;
    pthread_cond_broadcast(&t->cond);
    while (t->request)
        pthread_cond_wait(&t->cond, &t->lock);
    rc = t->result;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

static void stop_thread(struct kernel *k)
{
    struct kernel_thread *t = k->thread;

    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->id, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
    k->thread = NULL;
}

int kernel_start_thread(struct kernel *k)
{
    struct kernel_thread *t;
    int rc = ENOMEM;

    if (!k->enabled || k->thread)
        return 0;
    if ((t = calloc(1, sizeof(*t)))) {
        pthread_mutex_init(&t->lock, NULL);
        pthread_cond_init(&t->cond, NULL);
        t->fd = k->fd;
        if ((rc = pthread_create(&t->id, NULL, ioctl_thread, t)) == 0) {
            pthread_setname_np(t->id, "randd-kernel");   /* for top -H and tests */
            k->thread = t;
            return 0;
        }
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
    }
    k->enabled = false;
    snprintf(k->off_reason, sizeof(k->off_reason), "no thread for the kernel feed: %s",
             strerror(rc));
    log_err("kernel feed off: %s", k->off_reason);
    return -rc;
}

/* --- the feed ------------------------------------------------------------------------- */

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
    stop_thread(k);
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
}

bool kernel_became_initialised(struct kernel *k, uint64_t now_ns)
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

bool kernel_enabled(const struct kernel *k)
{
    return k->enabled;
}

bool kernel_initialised(const struct kernel *k)
{
    return k->initialised;
}

int kernel_initialised_fd(const struct kernel *k)
{
    return k->initialised ? -1 : k->fd;
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
    kernel_became_initialised(k, now_ns);
    bits = pool_take_kernel_material(p, req.data, now_ns);
    if (bits == 0 && pool_kernel_pending(p))
        return -EINPROGRESS;         /* jitter is at it; the caller feeds when it is ready */
    if (bits == 0)
        return fail(k, "no fresh material from a kernel-creditable source", ENODATA);
    req.info.entropy_count = (int)bits;
    req.info.buf_size = sizeof(req.data);
    rc = rnd_ioctl(k, RNDADDENTROPY, &req);
    OPENSSL_cleanse(&req, sizeof(req));
    if (rc < 0) {
        if (rc == -EPERM || rc == -EINVAL)
            switch_off(k, -rc);
        return fail(k, "RNDADDENTROPY", -rc);
    }
    k->topups++;
    k->bits_offered += bits;
    /* Before initialisation the credit itself counts; after it, only a reseed makes the
     * new material take effect now rather than at the kernel's next scheduled reseed. */
    if (k->initialised) {
        if ((rc = rnd_ioctl(k, RNDRESEEDCRNG, NULL)) < 0)
            return fail(k, "RNDRESEEDCRNG", -rc);
        k->reseeds++;
    }
    return 0;
}
