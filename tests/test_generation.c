/* The generation word's file (lib/generation.c): randd publishes a file it has just made and
 * never one it finds (another user's, a hard link, a wrong size, a symlink); it replaces only
 * its own leftover, retiring it for the clients still mapping it, and removes on withdraw only
 * the file it made. Clients map only a file no one but root or the directory's owner could
 * have written, in a directory no one else may write, and say why not. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "generation.h"
#include "runner.h"

#define NOBODY 65534

static char dir[64], path[256], why[512];

static void make_dir(mode_t mode)
{
    strcpy(dir, "/tmp/randd-test-generation-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, mode), 0);
    snprintf(path, sizeof(path), "%s/randd.sock.generation", dir);
    why[0] = '\0';
}

static void remove_dir(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A file at p: size bytes of c, mode, owner uid. */
static void put_file(const char *p, off_t size, int c, mode_t mode, uid_t uid)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    char block[512];

    ck_assert_int_ge(fd, 0);
    memset(block, c, sizeof(block));
    for (off_t done = 0; done < size; done += (off_t)sizeof(block))
        ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
    ck_assert_int_eq(ftruncate(fd, size), 0);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    ck_assert_int_eq(fchown(fd, uid, (gid_t)-1), 0);
    close(fd);
}

static bool need_root(const char *test)
{
    if (geteuid() == 0)
        return true;
    fprintf(stderr, "SKIP %s: needs root to make files of another uid; CI runs as root\n",
            test);
    return false;
}

static void assert_file_is(const char *p, const struct stat *before, int c)
{
    struct stat st;
    char buf[16];
    int fd;

    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert_msg(st.st_ino == before->st_ino && st.st_uid == before->st_uid &&
                  st.st_mode == before->st_mode && st.st_size == before->st_size,
                  "%s was changed: inode %lu uid %u mode %o size %lld, was %lu %u %o %lld", p,
                  (unsigned long)st.st_ino, st.st_uid, st.st_mode, (long long)st.st_size,
                  (unsigned long)before->st_ino, before->st_uid, before->st_mode,
                  (long long)before->st_size);
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        size_t n = st.st_size < (off_t)sizeof(buf) ? (size_t)st.st_size : sizeof(buf);

        fd = open(p, O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(read(fd, buf, n), (ssize_t)n);
        close(fd);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(buf[i] == c, "%s's content was rewritten", p);
    }
}

/* publish(g): randd publishes its word at path, or the test fails saying why not. */
static void publish(struct randd_generation *g)
{
    ck_assert_msg(randd_generation_publish(g, path, why, sizeof(why)) == 0, "publish %s: %s",
                  path, why);
}

/* mapped(): a client's mapping of path, or the test fails saying why it was refused. */
static const uint64_t *mapped(void)
{
    const uint64_t *word = randd_generation_map(path, why, sizeof(why));

    ck_assert_msg(word != NULL, "a client refused %s: %s", path, why);
    return word;
}

/* --- publishing --------------------------------------------------------------------------- */

START_TEST(publish_makes_a_fresh_page_mode_0644_with_one_link)
{
    struct randd_generation g;
    struct stat st;
    mode_t old = umask(077);            /* the unit's UMask= */

    make_dir(0755);
    publish(&g);
    umask(old);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_size, RANDD_GENERATION_FILE_SIZE);
    ck_assert_uint_eq(st.st_mode & 07777, 0644);
    ck_assert_uint_eq(st.st_nlink, 1);
    ck_assert_uint_eq(st.st_uid, geteuid());
    ck_assert_uint_eq(randd_generation_load(g.word), 0);
    ck_assert_int_eq(randd_generation_withdraw(&g), 0);
    ck_assert_int_eq(rmdir(dir), 0);    /* nothing left beside it: no temporary file */
}
END_TEST

START_TEST(publish_leaves_another_users_file_alone)
{
    struct randd_generation g;
    struct stat before;

    if (!need_root("publish_leaves_another_users_file_alone"))
        return;
    make_dir(0755);
    put_file(path, RANDD_GENERATION_FILE_SIZE, 'A', 0644, NOBODY);
    ck_assert_int_eq(lstat(path, &before), 0);
    ck_assert_int_eq(randd_generation_publish(&g, path, why, sizeof(why)), -EEXIST);
    ck_assert_ptr_null(g.word);
    ck_assert_msg(strstr(why, path) && strstr(why, "uid 65534"), "why: %s", why);
    assert_file_is(path, &before, 'A');
    remove_dir();
}
END_TEST

/* With fs.protected_hardlinks = 0 a user may link a root-only file there: randd must neither
 * write it nor chmod it. */
START_TEST(publish_leaves_a_hard_link_alone)
{
    char target[160];
    struct randd_generation g;
    struct stat before;

    make_dir(0755);
    snprintf(target, sizeof(target), "%s/secret", dir);
    put_file(target, RANDD_GENERATION_FILE_SIZE, 'S', 0600, geteuid());
    ck_assert_int_eq(link(target, path), 0);
    ck_assert_int_eq(lstat(target, &before), 0);
    ck_assert_int_eq(randd_generation_publish(&g, path, why, sizeof(why)), -EEXIST);
    ck_assert_msg(strstr(why, "2 links"), "why: %s", why);
    assert_file_is(target, &before, 'S');
    assert_file_is(path, &before, 'S');
    /* Even one that looks like randd's page in every other way. */
    ck_assert_int_eq(chmod(target, 0644), 0);
    ck_assert_int_eq(lstat(target, &before), 0);
    ck_assert_int_eq(randd_generation_publish(&g, path, why, sizeof(why)), -EEXIST);
    assert_file_is(target, &before, 'S');
    assert_file_is(path, &before, 'S');
    remove_dir();
}
END_TEST

START_TEST(publish_leaves_a_file_of_the_wrong_size_a_symlink_or_a_directory_alone)
{
    struct randd_generation g;
    struct stat before;

    make_dir(0755);
    put_file(path, 8, 'x', 0644, geteuid());               /* a truncated page */
    ck_assert_int_eq(lstat(path, &before), 0);
    ck_assert_int_eq(randd_generation_publish(&g, path, why, sizeof(why)), -EEXIST);
    ck_assert_msg(strstr(why, "8 bytes"), "why: %s", why);
    assert_file_is(path, &before, 'x');
    ck_assert_int_eq(unlink(path), 0);

    ck_assert_int_eq(symlink("/etc/passwd", path), 0);
    ck_assert_int_eq(lstat(path, &before), 0);
    ck_assert_int_eq(randd_generation_publish(&g, path, why, sizeof(why)), -EEXIST);
    ck_assert_msg(strstr(why, "not a regular file"), "why: %s", why);
    assert_file_is(path, &before, 0);
    ck_assert_int_eq(unlink(path), 0);

    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_int_eq(randd_generation_publish(&g, path, why, sizeof(why)), -EEXIST);
    ck_assert_int_eq(rmdir(path), 0);
    remove_dir();
}
END_TEST

/* A randd that died (SIGKILL, the watchdog) left its file: the next one replaces it with a
 * new file, and the clients still mapping the old one are told to move. */
START_TEST(publish_replaces_its_own_leftover_and_retires_it)
{
    struct randd_generation first, second;
    const uint64_t *old;
    struct stat st;

    make_dir(0755);
    publish(&first);
    old = mapped();
    ck_assert(!randd_generation_retired(old));
    publish(&second);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_uint_eq(st.st_ino, second.ino);
    ck_assert_uint_ne(st.st_ino, first.ino);
    ck_assert(randd_generation_retired(old));
    ck_assert_uint_eq(randd_generation_load(old), 1);          /* clients reseed */
    randd_generation_unmap(old);
    ck_assert_int_eq(randd_generation_withdraw(&second), 0);
    ck_assert_int_eq(access(path, F_OK), -1);
    /* first's file is gone: its withdraw touches no path, whatever is there now. */
    put_file(path, 4, 'z', 0600, geteuid());
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_int_eq(randd_generation_withdraw(&first), 0);
    assert_file_is(path, &st, 'z');
    remove_dir();
}
END_TEST

START_TEST(withdraw_removes_the_file_only_while_it_is_the_one_published)
{
    struct randd_generation g;
    const uint64_t *client;
    struct stat st;
    char other[160];

    make_dir(0755);
    publish(&g);
    client = mapped();
    ck_assert_int_eq(randd_generation_withdraw(&g), 0);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert(randd_generation_retired(client));
    randd_generation_unmap(client);

    publish(&g);
    snprintf(other, sizeof(other), "%s/other", dir);
    put_file(other, 16, 'o', 0644, geteuid());
    ck_assert_int_eq(rename(other, path), 0);                 /* replaced meanwhile */
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_int_eq(randd_generation_withdraw(&g), 0);
    assert_file_is(path, &st, 'o');
    remove_dir();
}
END_TEST

/* --- mapping ------------------------------------------------------------------------------ */

START_TEST(a_client_maps_the_file_randd_published)
{
    struct randd_generation g;
    const uint64_t *word;

    make_dir(0755);
    publish(&g);
    word = mapped();
    randd_generation_bump(g.word);
    ck_assert_uint_eq(randd_generation_load(word), 1);
    randd_generation_unmap(word);
    ck_assert_int_eq(randd_generation_withdraw(&g), 0);
    remove_dir();
}
END_TEST

/* Under systemd the directory and the file belong to randd's dynamic user, not root. */
START_TEST(a_client_maps_a_file_of_the_directorys_owner)
{
    const uint64_t *word;
    char sub[96];

    if (!need_root("a_client_maps_a_file_of_the_directorys_owner"))
        return;
    /* dir stands for /run (root's, 0755), DIR/randd for /run/randd (randd's, 0755). */
    make_dir(0755);
    snprintf(sub, sizeof(sub), "%s/randd", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_eq(chown(sub, NOBODY, (gid_t)-1), 0);
    snprintf(path, sizeof(path), "%s/randd.sock.generation", sub);
    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0644, NOBODY);
    word = mapped();
    randd_generation_unmap(word);
    remove_dir();
}
END_TEST

/* refused(what): the client does not map path, and why names it and says what. */
static void assert_refused(const char *what)
{
    const uint64_t *word;

    why[0] = '\0';
    word = randd_generation_map(path, why, sizeof(why));
    ck_assert_msg(word == NULL, "mapped a file that is %s", what);
    ck_assert_msg(strstr(why, path) && strstr(why, what), "why \"%s\", wanted the path and "
                  "\"%s\"", why, what);
}

START_TEST(a_client_refuses_a_file_someone_else_could_have_written)
{
    char other[160];

    if (!need_root("a_client_refuses_a_file_someone_else_could_have_written"))
        return;
    make_dir(0755);
    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0644, NOBODY);
    assert_refused("owned by uid 65534, neither root nor its directory's owner");
    ck_assert_int_eq(unlink(path), 0);

    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0666, 0);
    assert_refused("writable by others (mode 0666)");
    ck_assert_int_eq(chmod(path, 0664), 0);
    assert_refused("writable by others (mode 0664)");
    ck_assert_int_eq(chmod(path, 0644), 0);

    snprintf(other, sizeof(other), "%s/other", dir);
    ck_assert_int_eq(link(path, other), 0);
    assert_refused("2 links, not one");
    ck_assert_int_eq(unlink(other), 0);

    ck_assert_int_eq(truncate(path, 8), 0);                   /* SIGBUS past the end */
    assert_refused("8 bytes, not one page");
    ck_assert_int_eq(truncate(path, 8192), 0);
    assert_refused("8192 bytes, not one page");
    ck_assert_int_eq(unlink(path), 0);

    ck_assert_int_eq(mkfifo(path, 0644), 0);                  /* and it must not hang */
    assert_refused("not a regular file");
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(symlink(other, path), 0);
    put_file(other, RANDD_GENERATION_FILE_SIZE, 0, 0644, 0);
    ck_assert_ptr_null(randd_generation_map(path, why, sizeof(why)));   /* O_NOFOLLOW */
    ck_assert_int_eq(unlink(path), 0);

    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0644, 0);
    ck_assert_int_eq(chmod(dir, 01777), 0);            /* /tmp: anyone could replace it */
    assert_refused("is writable by others (mode 1777)");
    ck_assert_int_eq(chmod(dir, 0775), 0);
    assert_refused("is writable by its group (mode 0775)");
    remove_dir();
}
END_TEST

/* A directory on the way that another user may change lets them swap in a file of theirs,
 * which they can then truncate under a root client (SIGBUS) or rewrite: however the file
 * itself and the directory that holds it look, it is not mapped. */
static void make_sub(const char *name, mode_t mode, uid_t uid, gid_t gid)
{
    char p[160];

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    ck_assert_int_eq(chown(p, uid, gid), 0);
    ck_assert_int_eq(chmod(p, mode), 0);
}

START_TEST(a_client_refuses_a_file_through_a_symlink_in_a_shared_directory)
{
    char target[160], link[160];

    if (!need_root("a_client_refuses_a_file_through_a_symlink_in_a_shared_directory"))
        return;
    make_dir(0755);
    make_sub("priv", 0755, NOBODY, NOBODY);                 /* nobody's own directory */
    snprintf(path, sizeof(path), "%s/priv/randd.sock.generation", dir);
    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0644, NOBODY);
    snprintf(target, sizeof(target), "%s/priv", dir);
    for (int sticky = 0; sticky < 2; sticky++) {
        /* a group-writable directory (setgid, as /var/local), then one like /tmp */
        make_sub("shared", sticky ? 01777 : 02775, 0, NOBODY);
        snprintf(link, sizeof(link), "%s/shared/randd", dir);
        ck_assert_int_eq(symlink(target, link), 0);
        ck_assert_int_eq(lchown(link, NOBODY, NOBODY), 0);
        snprintf(path, sizeof(path), "%s/randd.sock.generation", link);
        assert_refused(sticky ? "/shared is writable by others (mode 1777)"
                              : "/shared is writable by its group (mode 2775)");
        ck_assert_int_eq(unlink(link), 0);
        snprintf(link, sizeof(link), "%s/shared", dir);
        ck_assert_int_eq(rmdir(link), 0);
    }
    remove_dir();
}
END_TEST

START_TEST(a_client_refuses_a_file_below_a_directory_others_may_change)
{
    if (!need_root("a_client_refuses_a_file_below_a_directory_others_may_change"))
        return;
    /* randd's directory, root's 0755, with root's file, in a group-writable directory: a
     * member of the group can move it aside and put its own in its place. */
    make_dir(0755);
    make_sub("shared", 02775, 0, NOBODY);
    make_sub("shared/randd", 0755, 0, 0);
    snprintf(path, sizeof(path), "%s/shared/randd/randd.sock.generation", dir);
    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0644, 0);
    assert_refused("/shared is writable by its group (mode 2775)");
    ck_assert_int_eq(unlink(path), 0);
    /* which is what nobody did: their directory, their file, passes every check below it */
    snprintf(why, sizeof(why), "%s/shared/randd", dir);
    ck_assert_int_eq(chown(why, NOBODY, NOBODY), 0);
    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0644, NOBODY);
    assert_refused("/shared is writable by its group (mode 2775)");
    remove_dir();
}
END_TEST

/* A directory above of a third uid could be changed by them: neither root nor randd. */
START_TEST(a_client_refuses_a_file_below_a_third_users_directory)
{
    if (!need_root("a_client_refuses_a_file_below_a_third_users_directory"))
        return;
    make_dir(0755);
    make_sub("home", 0755, 1, 1);                           /* daemon's (uid 1) */
    make_sub("home/randd", 0755, NOBODY, NOBODY);
    snprintf(path, sizeof(path), "%s/home/randd/randd.sock.generation", dir);
    put_file(path, RANDD_GENERATION_FILE_SIZE, 0, 0644, NOBODY);
    assert_refused("/home belongs to uid 1 and");
    remove_dir();
}
END_TEST

START_TEST(a_client_without_a_file_says_so)
{
    make_dir(0755);
    assert_refused("No such file or directory");
    remove_dir();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("generation");
    TCase *publish = tcase_create("publish"), *map = tcase_create("map");

    tcase_add_test(publish, publish_makes_a_fresh_page_mode_0644_with_one_link);
    tcase_add_test(publish, publish_leaves_another_users_file_alone);
    tcase_add_test(publish, publish_leaves_a_hard_link_alone);
    tcase_add_test(publish,
                   publish_leaves_a_file_of_the_wrong_size_a_symlink_or_a_directory_alone);
    tcase_add_test(publish, publish_replaces_its_own_leftover_and_retires_it);
    tcase_add_test(publish, withdraw_removes_the_file_only_while_it_is_the_one_published);
    tcase_add_test(map, a_client_maps_the_file_randd_published);
    tcase_add_test(map, a_client_maps_a_file_of_the_directorys_owner);
    tcase_add_test(map, a_client_refuses_a_file_someone_else_could_have_written);
    tcase_add_test(map, a_client_without_a_file_says_so);
    tcase_add_test(map, a_client_refuses_a_file_through_a_symlink_in_a_shared_directory);
    tcase_add_test(map, a_client_refuses_a_file_below_a_directory_others_may_change);
    tcase_add_test(map, a_client_refuses_a_file_below_a_third_users_directory);
    suite_add_tcase(s, publish);
    suite_add_tcase(s, map);
    return s;
}
