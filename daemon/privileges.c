/* The one place randd gives up privileges. Order matters: bounding set while CAP_SETPCAP is
 * still held, then the uid switch with PR_SET_KEEPCAPS so CAP_SYS_ADMIN survives it, then
 * the final permitted/effective sets, then no-new-privs and non-dumpable. Capabilities are
 * each thread's own: the kernel feed's thread starts after all this and inherits
 * CAP_SYS_ADMIN, and only then does the main thread let go of it. */
#include "privileges.h"

#include "log.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

static int failed(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "%s: %s", what, strerror(errno));
    return -1;
}

/* Whether the calling thread has cap in set (CAP_EFFECTIVE: may use it now; CAP_PERMITTED:
 * may keep it, as across a user switch with PR_SET_KEEPCAPS, which clears the effective). */
static bool holds(cap_value_t cap, cap_flag_t set)
{
    cap_t caps = cap_get_proc();
    cap_flag_value_t v = CAP_CLEAR;

    if (caps) {
        cap_get_flag(caps, cap, set, &v);
        cap_free(caps);
    }
    return v == CAP_SET;
}

static bool have_cap(cap_value_t cap)
{
    return holds(cap, CAP_EFFECTIVE);
}

static int drop_bounding_set(bool keep_sys_admin, char *why, size_t whylen)
{
    if (!have_cap(CAP_SETPCAP))
        return 0;                      /* not ours to change (e.g. systemd already did) */
    for (cap_value_t cap = 0; cap <= CAP_LAST_CAP; cap++) {
        if (keep_sys_admin && cap == CAP_SYS_ADMIN)
            continue;
        if (CAP_IS_SUPPORTED(cap) && cap_drop_bound(cap) < 0)
            return failed(why, whylen, "dropping the capability bounding set");
    }
    return 0;
}

static int switch_user(const char *user, char *why, size_t whylen)
{
    const struct passwd *pw = getpwnam(user);

    if (!pw) {
        snprintf(why, whylen, "user %s: no such user", user);
        return -1;
    }
    if (prctl(PR_SET_KEEPCAPS, 1) < 0 || setgroups(0, NULL) < 0 ||
        setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
        return failed(why, whylen, "switching to the configured user");
    prctl(PR_SET_KEEPCAPS, 0);
    return 0;
}

/* Permitted and effective down to those of keep[0..n) the thread has permitted now;
 * inheritable and ambient empty. */
static int keep_only(const cap_value_t *keep, size_t n, char *why, size_t whylen)
{
    cap_t caps = cap_init();            /* all sets empty */
    int rc;

    if (!caps)
        return failed(why, whylen, "cap_init");
    for (size_t i = 0; i < n; i++)
        if (holds(keep[i], CAP_PERMITTED)) {
            cap_set_flag(caps, CAP_PERMITTED, 1, &keep[i], CAP_SET);
            cap_set_flag(caps, CAP_EFFECTIVE, 1, &keep[i], CAP_SET);
        }
    rc = cap_set_proc(caps);
    cap_free(caps);
    if (rc < 0)
        return failed(why, whylen, "setting the capability sets");
    /* Ambient capabilities would survive an exec; randd never execs, but be exact. */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    return 0;
}

/* Set before any thread starts, read by each: no lock needed. */
static bool user_switch_planned;

void privileges_plan(bool switch_user)
{
    user_switch_planned = switch_user;
}

/* The new thread's part of privileges_start_thread. */
static void drop_in_thread(const char *thread)
{
    static const cap_value_t setxid[] = { CAP_SETUID, CAP_SETGID };
    size_t nkeep = user_switch_planned ? sizeof(setxid) / sizeof(setxid[0]) : 0;
    char why[128];

    if (drop_bounding_set(false, why, sizeof(why)) < 0 ||
        keep_only(setxid, nkeep, why, sizeof(why)) < 0 ||
        (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 &&
         failed(why, sizeof(why), "PR_SET_NO_NEW_PRIVS") < 0))
        log_err("%s: dropping its privileges failed: %s", thread, why);
}

struct thread_start {
    const char *name;
    void *(*fn)(void *);
    void *arg;
    sem_t dropped;           /* posted once the new thread holds nothing it should not */
};

static void *thread_main(void *arg)
{
    struct thread_start *start = arg;       /* the creator's: gone once dropped is posted */
    void *(*fn)(void *) = start->fn;
    void *fn_arg = start->arg;

    drop_in_thread(start->name);
    sem_post(&start->dropped);
    return fn(fn_arg);
}

int privileges_start_thread(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg)
{
    struct thread_start start = { .name = name, .fn = fn, .arg = arg };
    sigset_t all, before;
    int rc;

    if (sem_init(&start.dropped, 0, 0) < 0)
        return errno;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    rc = pthread_create(thread, NULL, thread_main, &start);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (rc == 0) {
        while (sem_wait(&start.dropped) < 0 && errno == EINTR)
            ;
        pthread_setname_np(*thread, name);  /* a name is a convenience: ERANGE is ignored */
    }
    sem_destroy(&start.dropped);
    return rc;
}

int privileges_drop(bool keep_sys_admin, const char *user, char *why, size_t whylen)
{
    static const cap_value_t admin = CAP_SYS_ADMIN;

    keep_sys_admin = keep_sys_admin && have_cap(CAP_SYS_ADMIN);
    if (drop_bounding_set(keep_sys_admin, why, whylen) < 0 ||
        (user[0] && switch_user(user, why, whylen) < 0) ||
        keep_only(&admin, keep_sys_admin ? 1 : 0, why, whylen) < 0)
        return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return failed(why, whylen, "PR_SET_NO_NEW_PRIVS");
    /* No core dumps, no ptrace by the same uid, /proc/PID owned by root. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return failed(why, whylen, "PR_SET_DUMPABLE");
    return 0;
}

int privileges_leave_to_kernel_thread(char *why, size_t whylen)
{
    return keep_only(NULL, 0, why, whylen);
}
