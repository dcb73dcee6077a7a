/* Binding socket paths safely (daemon/unix_socket.c): what is at the path is replaced only
 * when it is a stale socket, and unlinking on exit removes only the socket we bound. Each
 * test works in a fresh directory under /tmp. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "runner.h"
#include "unix_socket.h"

static char dir[64], path[128];
static char why[256];
static struct unix_socket us;

#define NO_GROUP ((gid_t)-1)
#define WHY      why, sizeof(why)

static void setup(void)
{
    strcpy(dir, "/tmp/randd-test-unix-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/s", dir);
    why[0] = '\0';
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A socket bound at at; listening (live) or closed at once (stale, as a killed daemon
 * leaves it). Returns the descriptor, or -1 for a stale one. */
static int socket_at(const char *at, int backlog, bool live)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (live) {
        ck_assert_int_eq(listen(fd, backlog), 0);
        return fd;
    }
    close(fd);
    return -1;
}

static void write_file(const char *at, const char *text)
{
    FILE *f = fopen(at, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void check_file_holds(const char *at, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(at, "r");

    ck_assert_msg(f != NULL, "%s: gone (%s); wanted it left alone", at, strerror(errno));
    ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
    fclose(f);
    ck_assert_str_eq(buf, text);
}

static void check_refused(int fd, const char *problem)
{
    char want[256];

    snprintf(want, sizeof(want), "socket %s: %s", path, problem);
    ck_assert_msg(fd < 0, "bound over what was at %s; wanted a refusal", path);
    ck_assert_msg(strstr(why, want), "why: \"%s\"; wanted it to say \"%s\"", why, want);
}

static ino_t inode(const char *at)
{
    struct stat st;

    ck_assert_int_eq(lstat(at, &st), 0);
    return st.st_ino;
}

START_TEST(a_fresh_path_is_bound_with_its_mode_and_unlinked_on_exit)
{
    struct stat st;
    mode_t before = umask(027);
    int fd = unix_socket_listen(&us, "socket", path, 0640, NO_GROUP, "", WHY);

    ck_assert_msg(fd >= 0, "listen on a fresh path failed: %s", why);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777, 0640);
    ck_assert(fcntl(fd, F_GETFL) & O_NONBLOCK);
    ck_assert_uint_eq(umask(before), 027);         /* the umask it set for bind() is undone */
    unix_socket_unlink(&us);
    ck_assert_int_ne(access(path, F_OK), 0);
    close(fd);
}
END_TEST

/* Whoever may write the directory may rename a symlink over the socket between two of our
 * steps: such a directory is refused before anything is bound in it. */
START_TEST(a_directory_others_may_write_is_refused)
{
    static const struct { mode_t mode; const char *problem; } cases[] = {
        { 0770, "is writable by its group (mode 0770)" },
        { 01777, "is writable by others (mode 1777)" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[256];

        ck_assert_int_eq(chmod(dir, cases[i].mode), 0);
        snprintf(want, sizeof(want), "%s %s", dir, cases[i].problem);
        check_refused(unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY), want);
        ck_assert_int_ne(access(path, F_OK), 0);
    }
}
END_TEST

START_TEST(a_directory_of_another_user_is_refused_unless_randd_becomes_them)
{
    char want[256];
    int fd;

    if (geteuid() != 0)
        return;                 /* only root can give the directory away */
    ck_assert_int_eq(chown(dir, 65534, (gid_t)-1), 0);
    snprintf(want, sizeof(want), "%s belongs to uid 65534, not to root or the user randd "
                                 "runs as", dir);
    check_refused(unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY), want);
    fd = unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "nobody", WHY);
    ck_assert_msg(fd >= 0, "with user = nobody, nobody's directory: %s", why);
    close(fd);
}
END_TEST

START_TEST(a_regular_file_is_refused_and_left_alone)
{
    write_file(path, "important\n");
    check_refused(unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY),
                  "exists and is not a socket");
    check_file_holds(path, "important\n");
    unix_socket_unlink(&us);                       /* nothing of ours: removes nothing */
    check_file_holds(path, "important\n");
}
END_TEST

START_TEST(a_directory_is_refused_and_left_alone)
{
    struct stat st;

    ck_assert_int_eq(mkdir(path, 0755), 0);
    check_refused(unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY),
                  "exists and is not a socket");
    ck_assert(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
}
END_TEST

/* Even to a stale socket: a symlink was put there by someone, not by randd. */
START_TEST(a_symlink_is_refused_even_to_a_stale_socket)
{
    char target[160];

    snprintf(target, sizeof(target), "%s/target", dir);
    socket_at(target, 0, false);
    ck_assert_int_eq(symlink(target, path), 0);
    check_refused(unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY),
                  "is a symbolic link");
    ck_assert_int_eq(access(target, F_OK), 0);
    ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

START_TEST(a_stale_socket_is_replaced)
{
    int fd;

    socket_at(path, 0, false);
    fd = unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY);
    ck_assert_msg(fd >= 0, "a stale socket was not replaced: %s", why);
    unix_socket_unlink(&us);
    close(fd);
}
END_TEST

START_TEST(a_live_socket_is_refused_and_keeps_its_listener)
{
    int live = socket_at(path, 8, true);
    ino_t before = inode(path);

    check_refused(unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY),
                  "another randd is already listening there");
    ck_assert_msg(inode(path) == before, "the live socket at %s was replaced", path);
    close(live);
}
END_TEST

/* A listener whose backlog is full cannot accept our probe: it is still live, and the probe
 * must not wait for it (the test's time limit would catch a blocking connect). */
START_TEST(a_live_socket_with_a_full_backlog_is_refused_without_waiting)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int live = socket_at(path, 0, true), queued[8], n = 0;

    strcpy(sa.sun_path, path);
    for (; n < 8; n++) {
        queued[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (connect(queued[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            ck_assert_int_eq(errno, EAGAIN);
            close(queued[n]);
            break;
        }
    }
    ck_assert_msg(n < 8, "the backlog of %s never filled", path);
    check_refused(unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY),
                  "another randd is already listening there");
    while (n-- > 0)
        close(queued[n]);
    close(live);
}
END_TEST

/* Our socket was removed under us and another daemon bound the path: on exit we must not
 * remove the other daemon's socket. */
START_TEST(unlink_leaves_a_socket_bound_at_the_path_since)
{
    struct unix_socket other;
    int ours, theirs;
    ino_t their_inode;

    ours = unix_socket_listen(&us, "socket", path, 0666, NO_GROUP, "", WHY);
    ck_assert_msg(ours >= 0, "%s", why);
    ck_assert_int_eq(unlink(path), 0);
    theirs = unix_socket_listen(&other, "socket", path, 0666, NO_GROUP, "", WHY);
    ck_assert_msg(theirs >= 0, "%s", why);
    their_inode = inode(path);
    unix_socket_unlink(&us);
    ck_assert_msg(access(path, F_OK) == 0 && inode(path) == their_inode,
                  "unlinking our socket removed the one bound at %s since", path);
    unix_socket_unlink(&other);
    ck_assert_int_ne(access(path, F_OK), 0);
    close(ours);
    close(theirs);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("unix_socket");
    TCase *tc = tcase_create("binding a path");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_fresh_path_is_bound_with_its_mode_and_unlinked_on_exit);
    tcase_add_test(tc, a_directory_others_may_write_is_refused);
    tcase_add_test(tc, a_directory_of_another_user_is_refused_unless_randd_becomes_them);
    tcase_add_test(tc, a_regular_file_is_refused_and_left_alone);
    tcase_add_test(tc, a_directory_is_refused_and_left_alone);
    tcase_add_test(tc, a_symlink_is_refused_even_to_a_stale_socket);
    tcase_add_test(tc, a_stale_socket_is_replaced);
    tcase_add_test(tc, a_live_socket_is_refused_and_keeps_its_listener);
    tcase_add_test(tc, a_live_socket_with_a_full_backlog_is_refused_without_waiting);
    tcase_add_test(tc, unlink_leaves_a_socket_bound_at_the_path_since);
    suite_add_tcase(s, tc);
    return s;
}
