/* privileges_start_thread (daemon/privileges.c): a thread randd starts has given up its
 * capabilities, its bounding set and new privileges before its function runs and before its
 * creator goes on, so no later step (a user switch above all) can catch it still holding
 * root's. Needs root, which CI has: elsewhere each test says it skipped. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "privileges.h"
#include "runner.h"

#define BIT(n) (1ULL << (n))

/* What the started thread's function does: nothing until released, so that whatever the
 * test reads of the thread was done before its function ran. */
static sem_t release;
static volatile int fn_ran;

static void *wait_to_be_released(void *arg)
{
    (void)arg;
    while (sem_wait(&release) < 0 && errno == EINTR)
        ;
    fn_ran = 1;
    return NULL;
}

/* A field of the status of the thread named name in this process, as a hexadecimal or
 * decimal number; the test fails if there is no such thread or field. */
static unsigned long long thread_field(const char *name, const char *field)
{
    DIR *tasks = opendir("/proc/self/task");
    struct dirent *t;
    char path[320], line[256], comm[64];
    unsigned long long value = 0;
    bool found = false;

    ck_assert_ptr_nonnull(tasks);
    while (!found && (t = readdir(tasks))) {
        FILE *f;

        if (t->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", t->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        comm[0] = '\0';
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = '\0';
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (strcmp(comm, name) != 0)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", t->d_name);
        ck_assert_ptr_nonnull(f = fopen(path, "r"));
        while (fgets(line, sizeof(line), f))
            if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':') {
                value = strtoull(line + strlen(field) + 1, NULL,
                                 strcmp(field, "NoNewPrivs") == 0 ? 10 : 16);
                found = true;
            }
        fclose(f);
    }
    closedir(tasks);
    ck_assert_msg(found, "no thread %s with a %s line", name, field);
    return value;
}

/* The same field of the calling thread's own status (by its name the program's, which under
 * qemu-user is the loader's). */
static unsigned long long own_field(const char *field)
{
    FILE *f = fopen("/proc/thread-self/status", "r");
    char line[256];
    unsigned long long value = 0;
    bool found = false;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':') {
            value = strtoull(line + strlen(field) + 1, NULL, 16);
            found = true;
        }
    fclose(f);
    ck_assert_msg(found, "no %s line in /proc/thread-self/status", field);
    return value;
}

static bool skip_unless_root(void)
{
    if (geteuid() == 0)
        return false;
    fprintf(stderr, "SKIP test_privileges: privileges_start_thread's drop needs root to be seen\n");
    return true;
}

static const unsigned long long signalfd_signals =
    BIT(SIGHUP - 1) | BIT(SIGINT - 1) | BIT(SIGUSR1 - 1) | BIT(SIGTERM - 1);

static pthread_t start_and_check(const char *name, unsigned long long wanted_caps)
{
    pthread_t thread;

    ck_assert_int_eq(sem_init(&release, 0, 0), 0);
    fn_ran = 0;
    ck_assert_int_eq(privileges_start_thread(&thread, name, wait_to_be_released, NULL), 0);
    ck_assert_int_eq(fn_ran, 0);
    ck_assert_uint_eq(thread_field(name, "CapBnd"), 0);
    ck_assert_uint_eq(thread_field(name, "CapPrm"), wanted_caps);
    ck_assert_uint_eq(thread_field(name, "CapEff"), wanted_caps);
    ck_assert_uint_eq(thread_field(name, "CapInh"), 0);
    ck_assert_uint_eq(thread_field(name, "NoNewPrivs"), 1);
    /* The signals main reads from a signalfd blocked (bit n - 1 for signal n): a thread that
     * took one would end randd by its default action. (Not every signal: qemu-user keeps
     * SIGSEGV and SIGBUS open in its threads.) */
    ck_assert_uint_eq(thread_field(name, "SigBlk") & signalfd_signals, signalfd_signals);
    return thread;
}

START_TEST(a_started_thread_holds_nothing_before_its_function_runs)
{
    pthread_t thread;

    if (skip_unless_root())
        return;
    ck_assert_uint_ne(own_field("CapBnd"), 0);                       /* root's, as CI's */
    privileges_plan(false);
    thread = start_and_check("randd-t-plain", 0);
    sem_post(&release);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
    ck_assert_int_eq(fn_ran, 1);
    /* The creator keeps what it had: capabilities are each thread's own. */
    ck_assert_uint_ne(own_field("CapEff"), 0);
}
END_TEST

/* With a switch to a user planned, the thread keeps CAP_SETUID and CAP_SETGID alone, which
 * glibc needs to apply the main thread's setresuid to it. */
START_TEST(with_a_user_switch_planned_only_setuid_and_setgid_are_kept)
{
    pthread_t thread;

    if (skip_unless_root())
        return;
    privileges_plan(true);
    thread = start_and_check("randd-t-switch", BIT(6) | BIT(7));  /* SETGID, SETUID */
    sem_post(&release);
    ck_assert_int_eq(pthread_join(thread, NULL), 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("privileges");
    TCase *tc = tcase_create("threads");

    tcase_add_test(tc, a_started_thread_holds_nothing_before_its_function_runs);
    tcase_add_test(tc, with_a_user_switch_planned_only_setuid_and_setgid_are_kept);
    suite_add_tcase(s, tc);
    return s;
}
