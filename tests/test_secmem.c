/* Secret memory (lib/secmem.c): small secrets share locked pages, so the locked total follows
 * what is allocated rather than the page size; each is wiped when freed; the shared pages are
 * left out of core dumps and wiped in a forked child. Locked bytes are read from VmLck in
 * /proc/self/status (each test runs in a child of its own, which starts with none). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner.h"
#include "secmem.h"

#define SMALL    200                 /* a secret of a few hundred bytes: a generator's state */
#define NSECRETS 64

static size_t page(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t locked_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    size_t kib = 0;

    ck_assert_msg(f != NULL, "cannot open /proc/self/status: %s", strerror(errno));
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmLck: %zu kB", &kib) == 1)
            break;
    fclose(f);
    return kib * 1024;
}

/* Whether mlock shows in VmLck here: AddressSanitizer makes mlock a no-op (check-asan), and
 * then no count of locked bytes can be checked. Asked of a page of the test's own. */
static int mlock_recorded(void)
{
    void *probe = mmap(NULL, page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t before = locked_bytes();
    int recorded;

    ck_assert(probe != MAP_FAILED);
    recorded = mlock(probe, page()) == 0 && locked_bytes() > before;
    munlock(probe, page());
    munmap(probe, page());
    return recorded;
}

/* The VmFlags of the mapping that holds p, from /proc/self/smaps ("" if none is found). */
static void vm_flags_of(const void *p, char *flags, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    char line[512];
    unsigned long lo, hi;
    int inside = 0;

    ck_assert_msg(f != NULL, "cannot open /proc/self/smaps: %s", strerror(errno));
    *flags = '\0';
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (unsigned long)p >= lo && (unsigned long)p < hi;
        else if (inside && !strncmp(line, "VmFlags:", 8)) {
            strncpy(flags, line + 8, len - 1);
            flags[len - 1] = '\0';
            break;
        }
    }
    fclose(f);
}

static int has_flag(const char *flags, const char *flag)
{
    char padded[8];

    snprintf(padded, sizeof(padded), " %s", flag);
    return strstr(flags, padded) != NULL;
}

/* Whether this kernel (or emulator: qemu-user ignores madvise) records the advice at all:
 * asked of a page of the test's own. */
static int madvise_recorded(const char *flag, int advice)
{
    void *probe = mmap(NULL, page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char flags[256];

    ck_assert(probe != MAP_FAILED);
    (void)madvise(probe, page(), advice);
    vm_flags_of(probe, flags, sizeof(flags));
    munmap(probe, page());
    return has_flag(flags, flag);
}

START_TEST(small_secrets_share_locked_pages)
{
    void *secret[NSECRETS];
    size_t before = locked_bytes(), after, bound;
    int lock_errno = 0;

    if (!mlock_recorded()) {
        fprintf(stderr, "SKIP: %s: mlock does not show in VmLck here (AddressSanitizer makes "
                        "it a no-op)\n", __func__);
        return;
    }

    for (int i = 0; i < NSECRETS; i++) {
        secret[i] = randd_secure_alloc(SMALL, &lock_errno);
        ck_assert_msg(secret[i] != NULL, "secret %d: %s", i, strerror(errno));
        if (lock_errno) {
            fprintf(stderr, "SKIP: %s: mlock: %s\n", __func__, strerror(lock_errno));
            return;
        }
        memset(secret[i], 0xa5, SMALL);
    }
    after = locked_bytes();
    /* What is allocated, rounded up to pages, and one page of slack; not a page a secret. */
    bound = (NSECRETS * SMALL + page() - 1) / page() * page() + page();
    ck_assert_msg(after - before <= bound, "%d secrets of %d bytes lock %zu bytes (pages of "
                  "%zu), wanted at most %zu", NSECRETS, SMALL, after - before, page(), bound);
    for (int i = 0; i < NSECRETS; i++)
        randd_secure_free(secret[i], SMALL);
    ck_assert_msg(locked_bytes() == before, "%zu bytes still locked after every secret was "
                  "freed (%zu before)", locked_bytes(), before);
}
END_TEST

/* A freed secret's bytes are zero before its page is given to the next one, which gets them
 * zeroed as promised; secrets never overlap. */
START_TEST(a_freed_secret_is_wiped_in_its_shared_page)
{
    static const uint8_t zero[SMALL];
    uint8_t *keep, *a, *b;
    int lock_errno;

    keep = randd_secure_alloc(SMALL, &lock_errno);       /* holds the page mapped */
    a = randd_secure_alloc(SMALL, &lock_errno);
    ck_assert(keep && a);
    ck_assert_msg(a >= keep + SMALL || a + SMALL <= keep, "secrets overlap");
    ck_assert_msg((size_t)a % 64 == 0 && (size_t)keep % 64 == 0, "not 64-byte aligned");
    memset(keep, 0x5a, SMALL);
    memset(a, 0xa5, SMALL);
    randd_secure_free(a, SMALL);
    ck_assert_msg(!memcmp(a, zero, SMALL), "a freed secret's bytes were left in the page");
    b = randd_secure_alloc(SMALL, &lock_errno);
    ck_assert(b != NULL);
    ck_assert_msg(!memcmp(b, zero, SMALL), "a new secret is not zeroed");
    for (int i = 0; i < SMALL; i++)
        ck_assert_msg(keep[i] == 0x5a, "the neighbour's byte %d changed", i);
    randd_secure_free(b, SMALL);
    randd_secure_free(keep, SMALL);
}
END_TEST

/* The shared pages keep the guarantees a page of its own had: left out of core dumps
 * (VmFlags dd) and wiped in a child of fork() (wf), as the child sees. */
START_TEST(shared_pages_are_left_out_of_dumps_and_wiped_in_a_child)
{
    uint8_t *a, *b;
    char flags[256];
    int lock_errno, status;
    pid_t pid;

    if (!madvise_recorded("dd", MADV_DONTDUMP) || !madvise_recorded("wf", MADV_WIPEONFORK)) {
        fprintf(stderr, "SKIP: %s: madvise is not recorded here (qemu-user ignores it)\n",
                __func__);
        return;
    }
    a = randd_secure_alloc(SMALL, &lock_errno);
    b = randd_secure_alloc(SMALL, &lock_errno);
    ck_assert(a && b);
    memset(a, 0xa5, SMALL);
    memset(b, 0x5a, SMALL);
    vm_flags_of(b, flags, sizeof(flags));
    ck_assert_msg(has_flag(flags, "dd") && has_flag(flags, "wf"), "a shared secret's page "
                  "has VmFlags%s, wanted dd and wf", flags);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < SMALL; i++)
            if (a[i] || b[i])
                _exit(1);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "a child of fork() saw the secrets' bytes");
    ck_assert_msg(a[0] == 0xa5 && b[0] == 0x5a, "the parent's secrets changed");
    randd_secure_free(a, SMALL);
    randd_secure_free(b, SMALL);
}
END_TEST

/* Secrets over half a page keep a mapping of their own, with the same advice. */
START_TEST(a_large_secret_has_its_own_locked_mapping)
{
    size_t len = 3 * page() + 1, before = locked_bytes();
    uint8_t *p;
    int lock_errno;

    p = randd_secure_alloc(len, &lock_errno);
    ck_assert(p != NULL);
    ck_assert_msg((size_t)p % page() == 0, "a large secret is not page-aligned");
    /* qemu-user -p 65536 locks the host's 4 KiB pages under its 64 KiB ones: at least len. */
    if (lock_errno == 0 && !mlock_recorded())
        fprintf(stderr, "SKIP: %s: mlock does not show in VmLck here (AddressSanitizer makes "
                        "it a no-op)\n", __func__);
    else if (lock_errno == 0)
        ck_assert_msg(locked_bytes() - before >= len && locked_bytes() - before <= 4 * page(),
                      "a secret of %zu bytes locks %zu", len, locked_bytes() - before);
    memset(p, 0xa5, len);
    randd_secure_free(p, len);
    ck_assert_uint_eq(locked_bytes(), before);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("secmem");
    TCase *tc = tcase_create("secmem");

    suite_add_tcase(s, tc);
    tcase_add_test(tc, small_secrets_share_locked_pages);
    tcase_add_test(tc, a_freed_secret_is_wiped_in_its_shared_page);
    tcase_add_test(tc, shared_pages_are_left_out_of_dumps_and_wiped_in_a_child);
    tcase_add_test(tc, a_large_secret_has_its_own_locked_mapping);
    return s;
}
