/* libfault.so: fault injection into the real daemon through LD_PRELOAD, so the code paths
 * under test are the ones that ship. RANDD_FAULTS picks the faults, comma-separated:
 *   getrandom=eagain      every getrandom() fails with EAGAIN (a kernel that has nothing)
 *   getrandom=eintr       every other getrandom() fails with EINTR
 *   getrandom=short       getrandom() returns at most 3 bytes a call
 *   ioctl=eperm|einval    RNDADDENTROPY and RNDRESEEDCRNG fail so (no CAP_SYS_ADMIN, a
 *                         kernel that refuses the request)
 *   memfd_create=enosys   memfd_create() fails with ENOSYS (a kernel before 3.17, or a
 *                         seccomp filter that forbids it): BYTES_MEMFD is unknown
 *   malloc=large          malloc of 64 KiB or more fails (a reply or a large request body),
 *                         only while the file named by RANDD_FAULTS_SWITCH exists, if set
 *   kat=blake2b           BLAKE2b of "abc" (the self-tests' known answer, RFC 7693) hashes
 *                         "abd" instead, only while the RANDD_FAULTS_SWITCH file exists, if
 *                         set: the seam that makes a self-test fail in a running daemon
 *   kat=drbg              every EVP_RAND_generate's first output byte is flipped, only while
 *                         the RANDD_FAULTS_SWITCH file exists, if set: the SP 800-90A
 *                         known-answer self-test of a DRBG engine fails (so would anything
 *                         else's EVP_RAND output: randd's own DRBGs are its only users)
 *   vmgenid=none          opening /dev/kmsg fails with EACCES (ProtectKernelLogs=yes) and a
 *                         uevent socket with EAFNOSUPPORT (no AF_NETLINK): nothing tells
 *                         randd of a VM clone
 *   loop=late             the first serving loop's thread (workers > 1) takes 8 s to reach
 *                         its loop, as a new thread may on a loaded machine or under
 *                         qemu-user: its PR_SET_NO_NEW_PRIVS, its last step first, sleeps
 * Test-only: never installed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/random.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

void *__libc_malloc(size_t n);

static int has_fault(const char *want)
{
    const char *faults = getenv("RANDD_FAULTS");
    size_t n = strlen(want);

    for (const char *p = faults; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, want, n) && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

void *malloc(size_t n)
{
    const char *sw;

    if (n >= 65536 && has_fault("malloc=large") &&
        (!(sw = getenv("RANDD_FAULTS_SWITCH")) || access(sw, F_OK) == 0))
        return errno = ENOMEM, NULL;
    return __libc_malloc(n);
}

int memfd_create(const char *name, unsigned flags)
{
    static int (*real)(const char *, unsigned);

    if (has_fault("memfd_create=enosys"))
        return errno = ENOSYS, -1;
    if (!real)
        real = (int (*)(const char *, unsigned))dlsym(RTLD_NEXT, "memfd_create");
    return real(name, flags);
}

ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
    static ssize_t (*real)(void *, size_t, unsigned);
    static unsigned calls;

    if (!real)
        real = (ssize_t (*)(void *, size_t, unsigned))dlsym(RTLD_NEXT, "getrandom");
    if (has_fault("getrandom=eagain"))
        return errno = EAGAIN, -1;
    if (has_fault("getrandom=eintr") && __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED) % 2 == 0)
        return errno = EINTR, -1;
    if (has_fault("getrandom=short") && len > 3)
        len = 3;
    return real(buf, len, flags);
}

int ioctl(int fd, unsigned long request, ...)
{
    static int (*real)(int, unsigned long, ...);
    va_list ap;
    void *arg;

    va_start(ap, request);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (!real)
        real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    if (request == RNDADDENTROPY || request == RNDRESEEDCRNG) {
        if (has_fault("ioctl=eperm"))
            return errno = EPERM, -1;
        if (has_fault("ioctl=einval"))
            return errno = EINVAL, -1;
    }
    return real(fd, request, arg);
}

int socket(int domain, int type, int protocol)
{
    static int (*real)(int, int, int);

    if (!real)
        real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    if (domain == AF_NETLINK && protocol == NETLINK_KOBJECT_UEVENT && has_fault("vmgenid=none"))
        return errno = EAFNOSUPPORT, -1;
    return real(domain, type, protocol);
}

/* open and open64 are one function in glibc on 64-bit, but either name may be called. */
static int open_or_fault(const char *name, const char *path, int flags, mode_t mode)
{
    int (*real)(const char *, int, ...);

    real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);

    if (!strcmp(path, "/dev/kmsg") && has_fault("vmgenid=none"))
        return errno = EACCES, -1;
    return real(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    va_list ap;

    if (flags & (O_CREAT | O_TMPFILE)) {
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return open_or_fault("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    va_list ap;

    if (flags & (O_CREAT | O_TMPFILE)) {
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return open_or_fault("open64", path, flags, mode);
}

/* OpenSSL's, declared here so that this library needs no OpenSSL headers: EVP_MD_CTX is
 * only passed through. */
int EVP_DigestUpdate(void *ctx, const void *data, size_t n);

int EVP_DigestUpdate(void *ctx, const void *data, size_t n)
{
    static int (*real)(void *, const void *, size_t);
    const char *sw;

    if (!real)
        real = (int (*)(void *, const void *, size_t))dlsym(RTLD_NEXT, "EVP_DigestUpdate");
    if (n == 3 && !memcmp(data, "abc", 3) && has_fault("kat=blake2b") &&
        (!(sw = getenv("RANDD_FAULTS_SWITCH")) || access(sw, F_OK) == 0))
        data = "abd";
    return real(ctx, data, n);
}

int EVP_RAND_generate(void *ctx, unsigned char *out, size_t outlen, unsigned int strength,
                      int prediction_resistance, const unsigned char *addin, size_t addin_len);

int EVP_RAND_generate(void *ctx, unsigned char *out, size_t outlen, unsigned int strength,
                      int prediction_resistance, const unsigned char *addin, size_t addin_len)
{
    static int (*real)(void *, unsigned char *, size_t, unsigned int, int,
                       const unsigned char *, size_t);
    const char *sw;
    int ok;

    if (!real)
        real = (int (*)(void *, unsigned char *, size_t, unsigned int, int,
                        const unsigned char *, size_t))dlsym(RTLD_NEXT, "EVP_RAND_generate");
    ok = real(ctx, out, outlen, strength, prediction_resistance, addin, addin_len);
    if (ok && outlen > 0 && has_fault("kat=drbg") &&
        (!(sw = getenv("RANDD_FAULTS_SWITCH")) || access(sw, F_OK) == 0))
        out[0] ^= 0x01;
    return ok;
}

/* Whether the calling thread is a serving loop. Its creator names it just after
 * pthread_create, so the name is awaited a while (every thread of randd's is named). */
static int named_serving_loop(int (*real)(int, ...))
{
    char name[16] = "";

    for (int ms = 0; ms < 1000; ms++) {
        real(PR_GET_NAME, (unsigned long)name, 0ul, 0ul, 0ul);
        if (!strncmp(name, "randd-", 6))
            break;
        usleep(1000);
    }
    return !strcmp(name, "randd-loop");
}

int prctl(int option, ...)
{
    static int (*real)(int, ...);
    static int delayed;
    unsigned long arg[4];
    va_list ap;

    va_start(ap, option);
    for (int i = 0; i < 4; i++)
        arg[i] = va_arg(ap, unsigned long);
    va_end(ap);
    if (!real)
        real = (int (*)(int, ...))dlsym(RTLD_NEXT, "prctl");
    if (option == PR_SET_NO_NEW_PRIVS && gettid() != getpid() && has_fault("loop=late") &&
        named_serving_loop(real) && !__atomic_exchange_n(&delayed, 1, __ATOMIC_SEQ_CST))
        sleep(8);
    return real(option, arg[0], arg[1], arg[2], arg[3]);
}
