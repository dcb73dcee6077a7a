/* lib/path_check.c: the walk behind librandd's trust rules, on real directories of root's
 * and nobody's. Symlinks in shared directories, chains of them, "..", relative paths, a
 * symlink as the last component and loops; and the /run/randd layout systemd makes, which
 * must pass. Needs root (directories of another uid); CI runs as root. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path_check.h"
#include "runner.h"

#define NOBODY 65534

static char base[64], why[1024];

static bool set_up(const char *test)
{
    if (geteuid() != 0) {
        fprintf(stderr, "SKIP %s: needs root to make directories of another uid\n", test);
        return false;
    }
    strcpy(base, "/tmp/randd-test-path-XXXXXX");     /* root's, in /tmp (root's, sticky) */
    ck_assert_ptr_nonnull(mkdtemp(base));
    ck_assert_int_eq(chmod(base, 0755), 0);
    why[0] = '\0';
    return true;
}

static void tear_down(void)
{
    char cmd[128];

    ck_assert_int_eq(chdir("/"), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *at(const char *rel)
{
    static char p[4][256];
    static int i;

    i = (i + 1) % 4;
    snprintf(p[i], sizeof(p[i]), "%s/%s", base, rel);
    return p[i];
}

static void dir_of(const char *rel, mode_t mode, uid_t uid)
{
    ck_assert_int_eq(mkdir(at(rel), 0700), 0);
    ck_assert_int_eq(chown(at(rel), uid, uid), 0);
    ck_assert_int_eq(chmod(at(rel), mode), 0);
}

static void file_of(const char *rel, uid_t uid)
{
    int fd = open(at(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchown(fd, uid, uid), 0);
    close(fd);
}

static void link_of(const char *rel, const char *target, uid_t uid)
{
    ck_assert_int_eq(symlink(target, at(rel)), 0);
    ck_assert_int_eq(lchown(at(rel), uid, uid), 0);
}

/* The walk of path for uid refuses it with rc, and why has what. */
static void assert_refused(const char *path, uid_t uid, int flags, int rc, const char *what)
{
    struct randd_path_end end;
    int got;

    why[0] = '\0';
    got = randd_path_check(path, uid, flags, &end, why, sizeof(why));
    if (got == 0)
        close(end.dirfd);
    ck_assert_msg(got == rc && strstr(why, what), "%s: rc %d (%s), wanted %d and \"%s\"", path,
                  got, why, rc, what);
}

/* The walk accepts path, ending in directory dir (relative to base) at entry name. */
static void assert_accepted(const char *path, uid_t uid, int flags, const char *dir,
                            const char *name, uid_t owner)
{
    struct randd_path_end end;
    struct stat want, got;
    int rc = randd_path_check(path, uid, flags, &end, why, sizeof(why));

    ck_assert_msg(rc == 0, "%s refused: %d: %s", path, rc, why);
    ck_assert_int_eq(stat(at(dir), &want), 0);
    ck_assert_int_eq(fstat(end.dirfd, &got), 0);
    ck_assert_msg(got.st_ino == want.st_ino && got.st_dev == want.st_dev,
                  "%s ended in %s, not in %s", path, end.dir, at(dir));
    ck_assert_str_eq(end.name, name);
    ck_assert_uint_eq(end.owner, owner);
    close(end.dirfd);
}

/* systemd's layout: /run root's 0755, /run/randd randd's (a dynamic uid) 0755. */
START_TEST(a_private_directory_like_run_randd_is_accepted)
{
    if (!set_up("a_private_directory_like_run_randd_is_accepted"))
        return;
    dir_of("randd", 0755, NOBODY);
    file_of("randd/randd.sock.generation", NOBODY);
    assert_accepted(at("randd/randd.sock.generation"), RANDD_PATH_FINAL_OWNER, 0, "randd",
                    "randd.sock.generation", NOBODY);
    assert_accepted(at("randd/randd.sock.generation"), NOBODY, 0, "randd",
                    "randd.sock.generation", NOBODY);
    /* the same layout for another uid's daemon: randd's directory is not theirs */
    assert_refused(at("randd/randd.sock.generation"), 1, 0, -EPERM,
                   "/randd belongs to uid 65534");
    tear_down();
}
END_TEST

/* The review's attack: nobody's private directory, reached through nobody's symlink in a
 * directory anyone (sticky, as /tmp) or a group (setgid, no sticky bit) may write. */
START_TEST(a_symlinked_directory_in_a_shared_directory_is_refused)
{
    if (!set_up("a_symlinked_directory_in_a_shared_directory_is_refused"))
        return;
    dir_of("priv", 0755, NOBODY);
    file_of("priv/randd.sock", NOBODY);
    dir_of("sticky", 01777, 0);
    dir_of("group", 02775, 0);
    link_of("sticky/randd", at("priv"), NOBODY);
    link_of("group/randd", at("priv"), NOBODY);
    assert_accepted(at("priv/randd.sock"), NOBODY, 0, "priv", "randd.sock", NOBODY);
    assert_refused(at("sticky/randd/randd.sock"), NOBODY, 0, -EPERM,
                   "/sticky is writable by others (mode 1777)");
    assert_refused(at("group/randd/randd.sock"), NOBODY, 0, -EPERM,
                   "/group is writable by its group (mode 2775)");
    assert_refused(at("group/randd/randd.sock"), RANDD_PATH_FINAL_OWNER, 0, -EPERM,
                   "/group is writable by its group");
    tear_down();
}
END_TEST

/* /tmp's exception is for root's entries only: no one else can move those. */
START_TEST(a_sticky_directory_of_roots_is_passed_to_roots_entries_only)
{
    if (!set_up("a_sticky_directory_of_roots_is_passed_to_roots_entries_only"))
        return;
    dir_of("sticky", 01777, 0);
    dir_of("sticky/root", 0755, 0);
    dir_of("sticky/root/randd", 0755, NOBODY);
    file_of("sticky/root/randd/sock", NOBODY);
    dir_of("sticky/nobody", 0755, NOBODY);
    file_of("sticky/nobody/sock", NOBODY);
    file_of("sticky/sock", 0);
    assert_accepted(at("sticky/root/randd/sock"), NOBODY, 0, "sticky/root/randd", "sock",
                    NOBODY);
    assert_refused(at("sticky/nobody/sock"), NOBODY, 0, -EPERM,
                   "/sticky is writable by others");
    /* and it never holds the last entry: anyone may add names there */
    assert_refused(at("sticky/sock"), 0, 0, -EPERM, "/sticky is writable by others");
    ck_assert_int_eq(chown(at("sticky"), NOBODY, NOBODY), 0);
    ck_assert_int_eq(chmod(at("sticky"), 01777), 0);
    assert_refused(at("sticky/root/randd/sock"), NOBODY, 0, -EPERM,
                   "/sticky is writable by others");
    tear_down();
}
END_TEST

/* root's link to root's link in a writable directory: the second may be swapped. */
START_TEST(a_symlink_chain_through_a_writable_directory_is_refused)
{
    if (!set_up("a_symlink_chain_through_a_writable_directory_is_refused"))
        return;
    dir_of("priv", 0755, NOBODY);
    file_of("priv/sock", NOBODY);
    dir_of("open", 0777, 0);
    link_of("open/second", at("priv"), NOBODY);
    link_of("first", "open/second", 0);             /* relative, from base */
    assert_refused(at("first/sock"), NOBODY, 0, -EPERM, "/open is writable by others");
    ck_assert_int_eq(chmod(at("open"), 0755), 0);
    assert_accepted(at("first/sock"), NOBODY, 0, "priv", "sock", NOBODY);
    tear_down();
}
END_TEST

/* ".." after a symlink goes up from the link's target, as the kernel goes: the directory it
 * reaches is checked, not the one the path's text suggests. */
START_TEST(a_dotdot_component_is_walked_as_the_kernel_walks_it)
{
    if (!set_up("a_dotdot_component_is_walked_as_the_kernel_walks_it"))
        return;
    dir_of("open", 0777, 0);
    dir_of("open/inner", 0755, 0);
    file_of("open/sock", 0);
    file_of("sock", 0);
    link_of("lnk", at("open/inner"), 0);
    assert_refused(at("lnk/../sock"), 0, 0, -EPERM, "is writable by others (mode 0777)");
    dir_of("ok", 0755, 0);
    assert_accepted(at("ok/../sock"), 0, 0, ".", "sock", 0);
    assert_refused(at("ok/.."), 0, 0, -EISDIR, "a directory, not a file");
    tear_down();
}
END_TEST

/* A relative path is walked from "/" through the current directory. */
START_TEST(a_relative_path_is_walked_from_the_root)
{
    if (!set_up("a_relative_path_is_walked_from_the_root"))
        return;
    dir_of("open", 0777, 0);
    dir_of("open/d", 0755, 0);
    file_of("open/d/sock", 0);
    ck_assert_int_eq(chdir(at("open/d")), 0);
    assert_refused("sock", 0, 0, -EPERM, "/open is writable by others");
    ck_assert_int_eq(chmod(at("open"), 0755), 0);
    assert_accepted("sock", 0, 0, "open/d", "sock", 0);
    assert_accepted("./../d//sock", 0, 0, "open/d", "sock", 0);
    tear_down();
}
END_TEST

/* A socket path whose last component is a symlink: followed, and the directory holding the
 * target is the one that must be private; without the flag the link is the entry. */
START_TEST(a_last_component_symlink_is_followed_when_asked)
{
    if (!set_up("a_last_component_symlink_is_followed_when_asked"))
        return;
    dir_of("priv", 0755, NOBODY);
    file_of("priv/sock", NOBODY);
    dir_of("open", 0777, 0);
    file_of("open/sock", NOBODY);
    link_of("priv/good", at("priv/sock"), NOBODY);
    link_of("priv/bad", at("open/sock"), NOBODY);
    assert_accepted(at("priv/good"), NOBODY, RANDD_PATH_FOLLOW_LAST, "priv", "sock", NOBODY);
    assert_refused(at("priv/bad"), NOBODY, RANDD_PATH_FOLLOW_LAST, -EPERM,
                   "/open is writable by others");
    assert_accepted(at("priv/bad"), NOBODY, 0, "priv", "bad", NOBODY);
    tear_down();
}
END_TEST

START_TEST(a_loop_of_symlinks_is_an_error)
{
    if (!set_up("a_loop_of_symlinks_is_an_error"))
        return;
    link_of("a", "b", 0);
    link_of("b", "a", 0);
    assert_refused(at("a/sock"), 0, 0, -ELOOP, "more than 40 symlinks");
    assert_refused(at("a"), 0, RANDD_PATH_FOLLOW_LAST, -ELOOP, "more than 40 symlinks");
    assert_refused(at("missing/sock"), 0, 0, -ENOENT, "/missing: No such file or directory");
    tear_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("path_check");
    TCase *tc = tcase_create("walk");

    tcase_add_test(tc, a_private_directory_like_run_randd_is_accepted);
    tcase_add_test(tc, a_symlinked_directory_in_a_shared_directory_is_refused);
    tcase_add_test(tc, a_sticky_directory_of_roots_is_passed_to_roots_entries_only);
    tcase_add_test(tc, a_symlink_chain_through_a_writable_directory_is_refused);
    tcase_add_test(tc, a_dotdot_component_is_walked_as_the_kernel_walks_it);
    tcase_add_test(tc, a_relative_path_is_walked_from_the_root);
    tcase_add_test(tc, a_last_component_symlink_is_followed_when_asked);
    tcase_add_test(tc, a_loop_of_symlinks_is_an_error);
    suite_add_tcase(s, tc);
    return s;
}
