/* internal/output_file.c: what may stand at an output's name, before the work and at the
 * rename; the temporary file's mode and its removal. The races the integration test cannot
 * time are made here by hand: a file or a symlink put at the name between open and commit;
 * another uid's symlink on the way to the directory.
 * (tests/integration/test_root_writes.sh plants the links as nobody and runs root's tools.) */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output_file.h"
#include "runner.h"

static char base[64], why[PATH_MAX + 256];

static void set_up(void)
{
    strcpy(base, "/tmp/randd-test-output-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
    why[0] = '\0';
}

static void tear_down(void)
{
    char cmd[128];

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

static void put(const char *rel, const char *text)
{
    FILE *f = fopen(at(rel), "wx");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static bool holds(const char *rel, const char *text)
{
    char got[256] = "";
    FILE *f = fopen(at(rel), "r");
    size_t n;

    if (!f)
        return false;
    n = fread(got, 1, sizeof(got) - 1, f);
    got[n] = '\0';
    fclose(f);
    return !strcmp(got, text);
}

/* The directory's entries, space-separated and sorted, in got. */
static void entries(char *got, size_t len)
{
    char cmd[160];
    FILE *p;
    size_t n;

    snprintf(cmd, sizeof(cmd), "cd '%s' && ls -A | sort | tr '\\n' ' '", base);
    ck_assert_ptr_nonnull(p = popen(cmd, "r"));
    n = fread(got, 1, len - 1, p);
    got[n] = '\0';
    pclose(p);
}

/* The directory holds exactly these entries (space-separated, sorted as ls sorts them). */
static void assert_entries(const char *want)
{
    char got[256];

    entries(got, sizeof(got));
    ck_assert_msg(!strcmp(got, want), "the directory holds \"%s\", wanted \"%s\"", got, want);
}

static int write_text(struct randd_output *o, const char *text)
{
    FILE *f = randd_output_stream(o);

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    return randd_output_commit(o, why, sizeof(why));
}

START_TEST(a_new_file_gets_the_mode_asked_whatever_the_umask)
{
    struct randd_output o;
    struct stat st;
    char tmp[256];
    mode_t old = umask(077);

    set_up();
    ck_assert_int_eq(randd_output_open(&o, at("page.html"), 0644, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), 0);
    entries(tmp, sizeof(tmp));  /* only the temporary, hidden: .page.html.XXXXXXXX */
    ck_assert_msg(strlen(tmp) == strlen(".page.html.XXXXXXXX ") &&
                  !strncmp(tmp, ".page.html.", 11), "the directory holds \"%s\"", tmp);
    ck_assert_int_eq(write_text(&o, "page"), 0);
    umask(old);
    ck_assert(holds("page.html", "page"));
    ck_assert_int_eq(lstat(at("page.html"), &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, 0644);
    assert_entries("page.html ");
    tear_down();
}
END_TEST

START_TEST(a_file_put_at_the_name_while_writing_is_not_replaced)
{
    struct randd_output o;

    set_up();
    ck_assert_int_eq(randd_output_open(&o, at("out"), 0600, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), 0);
    put("out", "someone else's");
    ck_assert_int_eq(write_text(&o, "ours"), -EEXIST);
    ck_assert_msg(strstr(why, "created by someone else while it was written"), "%s", why);
    ck_assert(holds("out", "someone else's"));
    assert_entries("out ");     /* and ours removed */
    tear_down();
}
END_TEST

START_TEST(a_symlink_put_at_the_name_while_writing_is_neither_followed_nor_replaced)
{
    struct randd_output o;

    set_up();
    put("secret", "root's");
    ck_assert_int_eq(randd_output_open(&o, at("metrics.prom"), 0644, RANDD_OUTPUT_REPLACE, why,
                                       sizeof(why)), 0);
    ck_assert_int_eq(symlink(at("secret"), at("metrics.prom")), 0);
    ck_assert_int_eq(write_text(&o, "ours"), -EPERM);
    ck_assert_msg(strstr(why, "a symbolic link (to ") && strstr(why, "not written through"),
                  "%s", why);
    ck_assert(holds("secret", "root's"));
    assert_entries("metrics.prom secret ");
    tear_down();
}
END_TEST

START_TEST(replace_takes_a_file_of_ours_with_one_link_and_nothing_else)
{
    struct randd_output o;

    set_up();
    put("ours", "old");
    ck_assert_int_eq(randd_output_open(&o, at("ours"), 0644, RANDD_OUTPUT_REPLACE, why,
                                       sizeof(why)), 0);
    ck_assert_int_eq(write_text(&o, "new"), 0);
    ck_assert(holds("ours", "new"));
    /* Without REPLACE the same file stays. */
    ck_assert_int_eq(randd_output_open(&o, at("ours"), 0644, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), -EEXIST);
    ck_assert_msg(strstr(why, "ours: already exists; not replaced"), "%s", why);
    /* A second name: what the file holds is shared, so it is not ours to drop. */
    ck_assert_int_eq(link(at("ours"), at("shared")), 0);
    ck_assert_int_eq(randd_output_open(&o, at("shared"), 0644, RANDD_OUTPUT_REPLACE, why,
                                       sizeof(why)), -EPERM);
    ck_assert_msg(strstr(why, "a file with 2 hard links"), "%s", why);
    ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
    ck_assert_int_eq(randd_output_open(&o, at("fifo"), 0644, RANDD_OUTPUT_REPLACE, why,
                                       sizeof(why)), -EPERM);
    ck_assert_msg(strstr(why, "not a regular file"), "%s", why);
    if (geteuid() == 0) {       /* another uid's file: needs root to make one */
        put("nobodys", "x");
        ck_assert_int_eq(chown(at("nobodys"), 65534, 65534), 0);
        ck_assert_int_eq(randd_output_open(&o, at("nobodys"), 0644, RANDD_OUTPUT_REPLACE, why,
                                           sizeof(why)), -EPERM);
        ck_assert_msg(strstr(why, "belongs to uid 65534"), "%s", why);
    } else {
        fprintf(stderr, "SKIP another uid's file: needs root to make one\n");
    }
    assert_entries(geteuid() == 0 ? "fifo nobodys ours shared " : "fifo ours shared ");
    tear_down();
}
END_TEST

START_TEST(another_uids_symlink_on_the_way_to_the_directory_is_not_followed)
{
    struct randd_output o;

    set_up();
    ck_assert_int_eq(mkdir(at("roots"), 0755), 0);
    put("roots/metrics.prom", "root's");
    /* One of our own on the way is followed, relative or absolute, as a plain path would be. */
    ck_assert_int_eq(symlink("roots", at("ours")), 0);
    ck_assert_int_eq(randd_output_open(&o, at("ours/new.prom"), 0644, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), 0);
    ck_assert_int_eq(write_text(&o, "new"), 0);
    ck_assert(holds("roots/new.prom", "new"));
    if (geteuid() != 0) {
        fprintf(stderr, "SKIP another uid's symlink on the way: needs root to make one\n");
        tear_down();
        return;
    }
    /* Another uid's (nobody's), pointing at our directory: the file there stays ours. */
    ck_assert_int_eq(symlink(at("roots"), at("nobodys")), 0);
    ck_assert_int_eq(lchown(at("nobodys"), 65534, 65534), 0);
    ck_assert_int_eq(randd_output_open(&o, at("nobodys/metrics.prom"), 0644,
                                       RANDD_OUTPUT_REPLACE, why, sizeof(why)), -EPERM);
    ck_assert_msg(strstr(why, "/nobodys is a symbolic link (to ") && strstr(why, "of uid 65534's"),
                  "%s", why);
    /* Reached through one of ours that leads to it, it is refused all the same. */
    ck_assert_int_eq(symlink("nobodys/.", at("via")), 0);
    ck_assert_int_eq(randd_output_open(&o, at("via/metrics.prom"), 0644, RANDD_OUTPUT_REPLACE,
                                       why, sizeof(why)), -EPERM);
    ck_assert_msg(strstr(why, "/nobodys is a symbolic link"), "%s", why);
    ck_assert(holds("roots/metrics.prom", "root's"));
    assert_entries("nobodys ours roots via ");
    tear_down();
}
END_TEST

START_TEST(a_path_that_cannot_be_written_fails_before_any_work)
{
    struct randd_output o;

    set_up();
    ck_assert_int_eq(randd_output_open(&o, at("missing/x.html"), 0644, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), -ENOENT);
    ck_assert_msg(strstr(why, "/missing: does not exist"), "%s", why);
    ck_assert_int_eq(randd_output_open(&o, at(""), 0644, RANDD_OUTPUT_NEW, why, sizeof(why)),
                     -EISDIR);
    ck_assert_int_eq(randd_output_open(&o, at(".."), 0644, RANDD_OUTPUT_NEW, why, sizeof(why)),
                     -EISDIR);
    put("file", "");            /* a file on the way, a loop of links, a path too long */
    ck_assert_int_eq(randd_output_open(&o, at("file/x"), 0644, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), -ENOTDIR);
    ck_assert_msg(strstr(why, "/file: not a directory"), "%s", why);
    ck_assert_int_eq(symlink("loop", at("loop")), 0);
    ck_assert_int_eq(randd_output_open(&o, at("loop/x"), 0644, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), -ELOOP);
    ck_assert_msg(strstr(why, "more than 40 symbolic links on the way"), "%s", why);
    {
        char longer[PATH_MAX + 2];

        memset(longer, 'a', sizeof(longer) - 1);
        for (size_t i = 1; i < sizeof(longer) - 1; i += 2)
            longer[i] = '/';
        longer[sizeof(longer) - 1] = '\0';
        ck_assert_int_eq(randd_output_open(&o, longer, 0644, RANDD_OUTPUT_NEW, why,
                                           sizeof(why)), -ENAMETOOLONG);
        ck_assert_msg(strstr(why, "a path longer than 4095 bytes"), "%s", why);
    }
    assert_entries("file loop ");
    tear_down();
}
END_TEST

START_TEST(abort_leaves_nothing_and_a_zeroed_output_is_left_alone)
{
    struct randd_output o, never = { 0 };
    int fd0 = fcntl(0, F_GETFD);

    set_up();
    ck_assert_int_eq(randd_output_open(&o, at("out"), 0600, RANDD_OUTPUT_NEW, why,
                                       sizeof(why)), 0);
    fputs("half", randd_output_stream(&o));
    randd_output_abort(&o);
    randd_output_abort(&o);     /* twice: a no-op */
    assert_entries("");
    randd_output_abort(&never); /* fd and dirfd 0 in it: stdin must stay open */
    ck_assert_int_eq(fcntl(0, F_GETFD), fd0);
    tear_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("output_file");
    TCase *tc = tcase_create("output_file");

    tcase_add_test(tc, a_new_file_gets_the_mode_asked_whatever_the_umask);
    tcase_add_test(tc, a_file_put_at_the_name_while_writing_is_not_replaced);
    tcase_add_test(tc, a_symlink_put_at_the_name_while_writing_is_neither_followed_nor_replaced);
    tcase_add_test(tc, replace_takes_a_file_of_ours_with_one_link_and_nothing_else);
    tcase_add_test(tc, another_uids_symlink_on_the_way_to_the_directory_is_not_followed);
    tcase_add_test(tc, a_path_that_cannot_be_written_fails_before_any_work);
    tcase_add_test(tc, abort_leaves_nothing_and_a_zeroed_output_is_left_alone);
    suite_add_tcase(s, tc);
    return s;
}
