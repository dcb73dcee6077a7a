/* Which process we are: a token that tells a child (of fork(), _Fork() or a raw clone()
 * without CLONE_VM) from the process whose memory it copied, at the cost of a load. The
 * client (a connection is its opener's alone) and the in-process generator (its state is its
 * seeder's alone) record it and compare; neither owns it. Not exported from librandd.so. */
#ifndef RANDD_PROCESS_TOKEN_H
#define RANDD_PROCESS_TOKEN_H

#include <stdint.h>

/* Nonzero; the same at every call in one process; in a child, different from every token
 * any of its ancestors had, even where the child's pid number is its parent's (a new PID
 * namespace). First call in a process: maps a page, and reads /proc/self/smaps once. */
uint64_t randd_process_token(void);

/* How randd_process_token() tells a child from its parent in this process, for the tests
 * and for anyone asking why a request costs a getpid(). Does not decide it. */
enum randd_process_check {
    RANDD_PROCESS_UNDECIDED,         /* no randd_process_token() call yet */
    RANDD_PROCESS_BY_WIPED_PAGE,     /* the token, in a page the kernel wipes in a child */
    RANDD_PROCESS_BY_PID,            /* getpid() each call: no such page could be had */
};
enum randd_process_check randd_process_check(void);

#endif
