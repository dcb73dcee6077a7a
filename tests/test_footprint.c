/* footprint.c: handing back start-up code pages shrinks the resident set and changes nothing
 * the process holds: written data, relocated read-only data (RELRO) and the heap keep their
 * bytes, and clean file pages read the file again. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "footprint.h"
#include "runner.h"

/* kB of a /proc/self/status field. */
static long status_kb(const char *field)
{
    char line[256];
    size_t len = strlen(field);
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "re");

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, field, len) && line[len] == ':')
            kb = strtol(line + len + 1, NULL, 10);
    fclose(f);
    return kb;
}

#define FILE_BYTES (4u << 20)

/* A file of FILE_BYTES of 0x11, unlinked at once, and its descriptor. */
static int scratch_file(void)
{
    char path[] = "/tmp/test_footprint.XXXXXX";
    static uint8_t chunk[65536];
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    unlink(path);
    memset(chunk, 0x11, sizeof(chunk));
    for (size_t at = 0; at < FILE_BYTES; at += sizeof(chunk))
        ck_assert_int_eq(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
    return fd;
}

static unsigned touch(const volatile uint8_t *p, size_t n)
{
    unsigned sum = 0;

    for (size_t at = 0; at < n; at += 4096)
        sum += p[at];
    return sum;
}

/* The Rss of the mapping that starts at addr, from /proc/self/smaps: its own pages, whatever
 * holds the file (a disk; tmpfs or the initramfs's rootfs, as /tmp is in the arm64 guest,
 * whose pages the process totals count elsewhere or not at all). -1: not found. */
static long mapping_rss_kb(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    char line[512];
    bool in = false;
    long kb = -1;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f)) {
        unsigned long start, end;

        if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {       /* a mapping's header */
            in = start == (unsigned long)addr;
            continue;
        }
        if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

/* A read-only mapping of a file, read through: its pages go. A private mapping written and
 * then made read-only, as the loader does to RELRO: its pages stay with their new bytes. */
START_TEST(clean_file_pages_go_and_written_ones_stay)
{
    int fd = scratch_file();
    uint8_t *code = mmap(NULL, FILE_BYTES, PROT_READ, MAP_PRIVATE, fd, 0);
    uint8_t *relro = mmap(NULL, FILE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    char *heap = malloc(100000);
    long before, after;

    ck_assert_ptr_ne(code, MAP_FAILED);
    ck_assert_ptr_ne(relro, MAP_FAILED);
    ck_assert_ptr_nonnull(heap);
    memset(heap, 0x5a, 100000);
    for (size_t at = 0; at < FILE_BYTES; at += 4096)
        relro[at] = 0x22;
    ck_assert_int_eq(mprotect(relro, FILE_BYTES, PROT_READ), 0);
    ck_assert_uint_eq(touch(code, FILE_BYTES), 0x11 * (FILE_BYTES / 4096));
    before = mapping_rss_kb(code);
    ck_assert_msg(before >= 3 * 1024, "the read-only mapping read through holds %ld kB",
                  before);
    ck_assert_uint_gt(footprint_release_code(), FILE_BYTES - 1);
    after = mapping_rss_kb(code);
    ck_assert_msg(after >= 0 && after <= 64, "the 4 MiB read-only mapping holds %ld kB "
                  "before, %ld kB after: it stayed", before, after);
    /* The written copy and the heap are as they were; the file mapping reads the file. */
    for (size_t at = 0; at < FILE_BYTES; at += 4096)
        ck_assert_int_eq(relro[at], 0x22);
    for (int i = 0; i < 100000; i++)
        ck_assert_int_eq((unsigned char)heap[i], 0x5a);
    ck_assert_uint_eq(touch(code, FILE_BYTES), 0x11 * (FILE_BYTES / 4096));
    free(heap);
    munmap(code, FILE_BYTES);
    munmap(relro, FILE_BYTES);
    close(fd);
}
END_TEST

/* kB of a field of the smaps entry of the mapping at start. */
static long smaps_kb(const void *start, const char *field)
{
    char line[512], head[32];
    size_t len = strlen(field);
    bool ours = false;
    long kb = -1;
    FILE *f = fopen("/proc/self/smaps", "re");

    ck_assert_ptr_nonnull(f);
    snprintf(head, sizeof(head), "%lx-", (unsigned long)(uintptr_t)start);
    while (fgets(line, sizeof(line), f)) {
        if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
            ours = !strncmp(line, head, strlen(head));
        else if (ours && !strncmp(line, field, len) && line[len] == ':')
            kb = strtol(line + len + 1, NULL, 10);
    }
    fclose(f);
    return kb;
}

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#define RELRO_BYTES (64u << 10)

/* RELRO swapped out: its pages are counted under Swap, no longer under Anonymous, and are
 * still the process's own (a library's GOT and method tables: dropped, they would read the
 * file's unrelocated pointers). They stay, and come back with their written bytes. */
START_TEST(swapped_out_written_pages_stay)
{
    int fd = scratch_file();
    uint8_t *relro = mmap(NULL, RELRO_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);

    ck_assert_ptr_ne(relro, MAP_FAILED);
    for (size_t at = 0; at < RELRO_BYTES; at += 4096)
        relro[at] = 0x22;
    ck_assert_int_eq(mprotect(relro, RELRO_BYTES, PROT_READ), 0);
    if (madvise(relro, RELRO_BYTES, MADV_PAGEOUT) < 0 || smaps_kb(relro, "Swap") <= 0) {
        printf("SKIP swapped_out_written_pages_stay: the pages could not be swapped out "
               "(no swap on this machine, or MADV_PAGEOUT before Linux 5.4)\n");
        munmap(relro, RELRO_BYTES);
        close(fd);
        return;
    }
    ck_assert_int_eq(smaps_kb(relro, "Anonymous"), 0);
    footprint_release_code();
    for (size_t at = 0; at < RELRO_BYTES; at += 4096)
        ck_assert_msg(relro[at] == 0x22, "byte %zu reads %#x, the file's: a swapped-out "
                      "written page was dropped", at, relro[at]);
    munmap(relro, RELRO_BYTES);
    close(fd);
}
END_TEST

/* Twice in a row is harmless, and the process's own code runs on between them. */
START_TEST(releasing_again_is_harmless)
{
    footprint_release_code();
    ck_assert_int_gt(status_kb("VmRSS"), 0);
    footprint_release_code();
    ck_assert_int_gt(status_kb("VmRSS"), 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("footprint");
    TCase *tc = tcase_create("release");

    tcase_add_test(tc, clean_file_pages_go_and_written_ones_stay);
    tcase_add_test(tc, swapped_out_written_pages_stay);
    tcase_add_test(tc, releasing_again_is_harmless);
    suite_add_tcase(s, tc);
    return s;
}
