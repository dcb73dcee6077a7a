/* Which process we are (process_token.h): a token that a child, however it was made, never
 * shares with its parent. Owns the token's page and the choice of how to tell; what a
 * mismatch means (reconnect, reseed) belongs to the callers.
 *
 * Why not the pid: a pid number names a process only within its PID namespace. A child in a
 * new namespace can have its parent's number (clone3()'s set_tid, or by chance), and would
 * then take its parent's connection for its own. A token is the process's alone.
 *
 * The token lives in a page of its own mapped MADV_WIPEONFORK: any child (fork(), _Fork(), a
 * raw clone() without CLONE_VM: no atfork handler needed) reads 0 there and takes a new
 * token at its first call. A new token is one more than the newest this process's memory has
 * seen (newest_token, in ordinary memory that a child inherits). Every token recorded in what
 * a child inherited was taken by it or by an ancestor before the fork, so is at most that
 * number: the child's is new to it, with no system call and nothing that can fail. */
#include "process_token.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PID_TAG ((uint64_t)1 << 63)  /* a pid as a token: never one the counter gives */

static uint64_t *token_page;         /* the wiped page; NULL: none, or not decided yet */
static uint64_t newest_token;        /* not wiped: a child's starts from its parent's */
static int check = RANDD_PROCESS_UNDECIDED;
static pthread_once_t decide_once = PTHREAD_ONCE_INIT;

/* --- believing the advice ------------------------------------------------------------------
 * qemu-user accepts MADV_WIPEONFORK and ignores it: a raw clone()'s child would keep its
 * parent's page, token and all. The kernel shows the advice taken as "wf" among the
 * mapping's VmFlags in /proc/self/smaps (since Linux 4.14, with the advice itself); qemu-user
 * does not. So the page is used only once smaps shows it wiped; otherwise (no /proc in a
 * chroot, say), getpid() each call, as a child's pid at least differs in its own namespace.
 * smaps is read once per program (a child inherits the page, its advice and the answer), up
 * to the page's entry. Each entry before it (each mapping at a lower address) costs a walk of
 * its page tables: 0.4 ms in a small program here, 12 ms with 1 GiB resident below it. */

/* Whether flags (a VmFlags line's value: " rd wr mr mw me ac wf\n") has flag. */
static bool has_flag(const char *flags, const char *flag)
{
    size_t n = strlen(flag);

    for (const char *p = strstr(flags, flag); p; p = strstr(p + n, flag))
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/* Whether line heads the entry of a mapping that holds page ("start-end perms ..."). */
static bool entry_holds(const char *line, uintptr_t page)
{
    char *end;
    unsigned long start = strtoul(line, &end, 16), stop;

    if (end == line || *end != '-')
        return false;
    stop = strtoul(end + 1, &end, 16);
    return *end == ' ' && start <= page && page < stop;
}

/* Small reads: the kernel makes each entry as it is read, and a read that finishes one makes
 * the next only as far as the read asks (a 4 KiB one could take in several, and each costs a
 * walk of that mapping's page tables). The entry after the page's is its guard's: empty. */
static bool smaps_shows_wiped(const void *page)
{
    char line[512], buffer[256];
    FILE *smaps = fopen("/proc/self/smaps", "re");
    bool line_start = true, ours = false, wiped = false;

    if (!smaps)
        return false;
    setvbuf(smaps, buffer, _IOFBF, sizeof(buffer));
    while (fgets(line, sizeof(line), smaps)) {
        if (line_start && !ours)
            ours = entry_holds(line, (uintptr_t)page);
        else if (line_start && strncmp(line, "VmFlags:", 8) == 0) {
            wiped = has_flag(line + 8, "wf");
            break;                   /* the last line of our entry */
        }
        line_start = strchr(line, '\n') != NULL;   /* else the rest of a long line follows */
    }
    fclose(smaps);
    return wiped;
}

/* The token's page, and above it a guard page (PROT_NONE: never merged with it) that ends
 * the page's entry in smaps cheaply. */
static void decide(void)
{
    size_t len = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, 2 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p != MAP_FAILED && mprotect(p, len, PROT_READ | PROT_WRITE) == 0 &&
        madvise(p, len, MADV_WIPEONFORK) == 0 && smaps_shows_wiped(p)) {
        __atomic_store_n(&check, RANDD_PROCESS_BY_WIPED_PAGE, __ATOMIC_RELAXED);
        __atomic_store_n(&token_page, (uint64_t *)p, __ATOMIC_RELEASE);
        return;
    }
    if (p != MAP_FAILED)
        munmap(p, 2 * len);
    __atomic_store_n(&check, RANDD_PROCESS_BY_PID, __ATOMIC_RELAXED);
}

/* --- the token -------------------------------------------------------------------------- */

/* The first call in a new process. Another thread of it may take one at the same time: the
 * first to store it wins, and both return that one. */
static uint64_t new_token(uint64_t *page)
{
    uint64_t mine = __atomic_add_fetch(&newest_token, 1, __ATOMIC_SEQ_CST), first = 0;

    if (__atomic_compare_exchange_n(page, &first, mine, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
        return mine;
    return first;
}

uint64_t randd_process_token(void)
{
    uint64_t *page = __atomic_load_n(&token_page, __ATOMIC_ACQUIRE), token;

    if (!page) {
        pthread_once(&decide_once, decide);
        page = __atomic_load_n(&token_page, __ATOMIC_ACQUIRE);
        if (!page)
            return PID_TAG | (uint64_t)getpid();
    }
    token = __atomic_load_n(page, __ATOMIC_RELAXED);
    return token ? token : new_token(page);
}

enum randd_process_check randd_process_check(void)
{
    return (enum randd_process_check)__atomic_load_n(&check, __ATOMIC_RELAXED);
}
