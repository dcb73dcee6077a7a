/* randctl assess FILE --restart --h-initial H: the SP 800-90B 3.1.4 restart tests on a row
 * dataset (1,000 restarts of 1,000 samples, one per byte, as `randd --capture --restarts`
 * writes it), printed as NIST's `ea_restart -n -v` gives them, and with --report OUT.html
 * handed to the page (assess_report.c). Owns its arguments, reading the matrix and the
 * printed report; the tests are internal/entropy_restart.c's. Needs no daemon. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "assess.h"
#include "entropy_restart.h"
#include "randctl.h"

/* Reads exactly the matrix from path (- for stdin) into m; *n is what the file held, up to
 * one byte more than the matrix, so a longer file is told apart. Returns 0 or -errno. */
static int read_matrix(const char *path, uint8_t *m, size_t *n)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t got;
    int rc = 0;

    *n = 0;
    if (!f)
        return -errno;
    while (*n <= RANDD_EA_RESTART_MATRIX &&
           (got = fread(m + *n, 1, RANDD_EA_RESTART_MATRIX + 1 - *n, f)) > 0)
        *n += got;
    if (ferror(f))
        rc = -EIO;
    if (f != stdin)
        fclose(f);
    return rc;
}

/* One line per stage on stderr; on a terminal, one line redrawn. */
static void restart_progress(void *arg, double done, const char *what)
{
    static char last[96];
    static int last_percent = -1;
    bool tty = *(bool *)arg;
    int percent = (int)(done * 100.0);

    if (!strcmp(what, last) && (!tty || percent == last_percent))
        return;
    last_percent = percent;
    snprintf(last, sizeof(last), "%s", what);
    fprintf(stderr, tty ? "\r\033[Kassess: %3d%% %s" : "assess: %3d%% %s\n", percent, what);
}

static void print_estimate(double h)
{
    if (isnan(h))
        printf(" %10s", "-");
    else
        printf(" %10.8f", h);
}

static void print_restart(const char *path, const struct randd_ea_restart_result *r)
{
    printf("file: %s\n", path);
    printf("restart matrix: %u restarts x %u samples, %u bit%s each, %u distinct value%s\n",
           RANDD_EA_RESTARTS, RANDD_EA_RESTART_SAMPLES, r->bits, r->bits == 1 ? "" : "s",
           r->symbols, r->symbols == 1 ? "" : "s");
    printf("H_I: %.8f\n", r->h_initial);
    if (r->symbols < 2) {
        printf("min(H_r, H_c, H_I): 0 bits per sample (one value only)\n");
        return;
    }
    printf("alpha: %.17g, X_cutoff: %u\n", r->alpha, r->x_cutoff);
    printf("X_max: %u (rows %u, columns %u); over X_cutoff: %u row%s, %u column%s\n",
           r->x_max, r->x_rows, r->x_cols, r->rows_over, r->rows_over == 1 ? "" : "s",
           r->cols_over, r->cols_over == 1 ? "" : "s");
    printf("sanity check (3.1.4.3): %s\n", r->sanity_passed ? "passed" : "FAILED");
    if (!r->sanity_passed)
        return;
    printf("%-30s %10s %10s\n", "estimate (SP 800-90B)", "rows", "columns");
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
        char name[48];

        if (isnan(r->rows.literal[e]) && isnan(r->cols.literal[e]))
            continue;
        snprintf(name, sizeof(name), "%s (%s)", randd_ea_names[e], randd_ea_sections[e]);
        printf("%-30s", name);
        print_estimate(r->rows.literal[e]);
        print_estimate(r->cols.literal[e]);
        printf("\n");
    }
    printf("H_r: %.8f\nH_c: %.8f\n", r->h_r, r->h_c);
    printf("validation (3.1.4.2, min(H_r, H_c) >= H_I/2): %s\n",
           r->validation_passed ? "passed" : "FAILED");
    if (r->validation_passed)
        printf("min(H_r, H_c, H_I): %.8f bits per sample\n", r->h_restart);
    if (assess_restart_above_steady(r))
        printf("note: the restarts assess %.2f bits a sample above H_I. %s\n",
               fmin(r->h_r, r->h_c) - r->h_initial, assess_restart_above_note);
}

bool assess_restart_above_steady(const struct randd_ea_restart_result *r)
{
    return r->sanity_passed && r->validation_passed && fmin(r->h_r, r->h_c) >= r->h_initial + 1;
}

const char assess_restart_above_note[] =
    "A source that warms up as it runs (jitter's buffer coming into the caches) gives richer "
    "samples just after a start, and after a pause, than in its steady state: that passes, and "
    "H_I must come from a long capture of one start, not from restart data (randd(8), "
    "--restarts; docs/assessment.md).";

static int parse_entropy(const char *s, double *h)
{
    char *end;

    errno = 0;
    *h = strtod(s, &end);
    return *s && !*end && errno == 0 && *h >= 0.0 && *h <= 8.0;
}

static int write_report(struct randd_output *out, const char *path, const uint8_t *m,
                        const struct randd_ea_restart_result *r)
{
    struct assess_report page = { path, m, RANDD_EA_RESTART_MATRIX, r->bits, NAN, NULL, NULL,
                                  r };

    return assess_report_write(out, &page);
}

int run_assess_restart(int argc, char **argv)
{
    bool show = isatty(STDERR_FILENO), tty = show, have_h = false, force = false;
    struct randd_output report_file = { 0 };
    struct randd_ea_restart_result *r = NULL;
    unsigned long long bits = 0;
    const char *path = NULL, *report = NULL;
    uint8_t *m = NULL;
    unsigned width;
    size_t n;
    double h = 0.0;
    int rc;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--restart")) {
            continue;
        } else if (!strcmp(argv[i], "--bits") && i + 1 < argc) {
            if (!parse_count(argv[++i], 8, &bits) || bits == 0)
                return usage_error(&cmd_assess, "--bits: not a number from 1 to 8: %s",
                                   argv[i]);
        } else if (!strcmp(argv[i], "--h-initial") && i + 1 < argc) {
            if (!parse_entropy(argv[++i], &h))
                return usage_error(&cmd_assess, "--h-initial: not a number from 0 to 8: %s",
                                   argv[i]);
            have_h = true;
        } else if (!strcmp(argv[i], "--progress")) {
            show = true;
        } else if (!strcmp(argv[i], "--report") && i + 1 < argc) {
            if (!*(report = argv[++i]))
                return usage_error(&cmd_assess, "--report: an empty file name");
        } else if (!strcmp(argv[i], "--force")) {
            force = true;
        } else if (!path && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) {
            path = argv[i];
        } else {
            return usage_error(&cmd_assess, "--restart: bad argument: %s", argv[i]);
        }
    }
    if (!path)
        return usage_error(&cmd_assess, "FILE is missing");
    if (!have_h)
        return usage_error(&cmd_assess, "--restart needs --h-initial H, the entropy claimed "
                           "per sample (the non-IID assessment's)");
    if (force && !report)
        return usage_error(&cmd_assess, "--force: only with --report (it may replace the page)");
    if (report && (rc = assess_report_open(&report_file, report, force)) != EXIT_OK)
        return rc;
    if (!(m = malloc(RANDD_EA_RESTART_MATRIX + 1)) || !(r = malloc(sizeof(*r)))) {
        randd_output_abort(&report_file);
        free(m);
        return fail("assess", -ENOMEM);
    }
    if ((rc = read_matrix(path, m, &n)) < 0) {
        fprintf(stderr, "randctl: %s: %s\n", path, strerror(-rc));
        rc = EXIT_FAILED;
        goto out;
    }
    rc = EXIT_USAGE;
    width = randd_ea_width(m, n);
    if (n != RANDD_EA_RESTART_MATRIX) {
        data_error(&cmd_assess, "%s: %s%zu samples; a restart matrix is %u restarts of %u "
                    "samples (%u)", path, n > RANDD_EA_RESTART_MATRIX ? "more than " : "",
                    n > RANDD_EA_RESTART_MATRIX ? n - 1 : n, RANDD_EA_RESTARTS,
                    RANDD_EA_RESTART_SAMPLES, RANDD_EA_RESTART_MATRIX);
    } else if (bits && width > bits) {
        data_error(&cmd_assess, "%s: values up to %u bits wide, wider than --bits %llu", path,
                    width, bits);
    } else if (h > (bits ? bits : width ? width : 1)) {
        unsigned w = bits ? (unsigned)bits : width ? width : 1;

        usage_error(&cmd_assess, "--h-initial %g: more than the %u bit%s a sample holds", h, w,
                    w == 1 ? "" : "s");
    } else {
        rc = randd_ea_restart(m, n, (unsigned)bits, h, r, show ? restart_progress : NULL, &tty);
        if (show && tty)
            fprintf(stderr, "\r\033[K");
        if (rc == -EDOM) {
            rc = usage_error(&cmd_assess, "--h-initial %g: more than log2(%u) = %.6f, the most "
                             "min-entropy %u distinct values can have", h, r->symbols,
                             log2(r->symbols), r->symbols);
        } else if (rc < 0) {
            rc = fail("assess", rc);
        } else {
            bool passed = r->symbols >= 2 && r->sanity_passed && r->validation_passed;

            print_restart(path, r);
            printf("restart tests: %s\n", passed ? "passed" : "FAILED");
            rc = fflush(stdout) == 0 ? EXIT_OK : fail("assess", -EIO);
            if (rc == EXIT_OK && !passed)      /* a verdict, not an error: exit 0 as --iid */
                fprintf(stderr, "randctl: assess: %s: the restart tests fail: %s\n", path,
                        r->symbols < 2 ? "one value only, no entropy" :
                        !r->sanity_passed ? "the sanity check (X_max > X_cutoff)" :
                        "the validation (min(H_r, H_c) < H_I/2)");
            if (rc == EXIT_OK && report)
                rc = write_report(&report_file, path, m, r);
        }
    }
out:
    randd_output_abort(&report_file);     /* a page not written (an error): nothing left */
    OPENSSL_clear_free(m, RANDD_EA_RESTART_MATRIX + 1);
    free(r);
    return rc;
}
