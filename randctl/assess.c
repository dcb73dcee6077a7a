/* randctl assess: the SP 800-90B non-IID min-entropy of a file of samples, one per byte, as
 * NIST's ea_non_iid computes it. Owns reading the file and the report; the estimators are
 * internal/entropy_assess.c's. Needs no daemon. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "entropy_assess.h"
#include "randctl.h"

/* --- progress ------------------------------------------------------------------------------- */

/* On a terminal one line, redrawn as the percentage moves; otherwise (--progress into a
 * file or pipe) a line per estimator. */
struct progress {
    bool tty;
    int percent;
    char what[64];
};

static void show_progress(void *arg, double done, const char *what)
{
    struct progress *p = arg;
    int percent = (int)(done * 100.0);
    bool next = strcmp(what, p->what) != 0;

    if (!next && (!p->tty || percent == p->percent))
        return;
    p->percent = percent;
    snprintf(p->what, sizeof(p->what), "%s", what);
    fprintf(stderr, p->tty ? "\r\033[Kassess: %3d%% %s" : "assess: %3d%% %s\n", percent, what);
}

/* --- the file ------------------------------------------------------------------------------- */

/* Reads all of path (- for stdin), up to one byte more than the assessment takes. Returns
 * the buffer (NULL with errno set) and its length in *n. */
static uint8_t *read_samples(const char *path, size_t *n)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 1 << 20, limit = (size_t)RANDD_EA_MAX_SAMPLES + 1;
    uint8_t *buf = NULL, *bigger;
    int err = 0;

    *n = 0;
    if (!f)
        return NULL;
    for (;;) {
        size_t got;

        if (!(bigger = malloc(cap))) {
            err = ENOMEM;
            break;
        }
        if (buf)
            memcpy(bigger, buf, *n);
        OPENSSL_clear_free(buf, *n);
        buf = bigger;
        while (*n < cap && (got = fread(buf + *n, 1, cap - *n, f)) > 0)
            *n += got;
        if (ferror(f))
            err = EIO;
        if (*n < cap || cap >= limit || err)
            break;
        cap = cap * 2 < limit ? cap * 2 : limit;
    }
    if (f != stdin)
        fclose(f);
    if (err) {
        OPENSSL_clear_free(buf, *n);
        errno = err;
        return NULL;
    }
    return buf;
}

/* --- the report ----------------------------------------------------------------------------- */

static void print_estimate(double h)
{
    if (isnan(h))
        printf(" %10s", "-");
    else
        printf(" %10.8f", h);
}

static void print_report(const char *path, const struct randd_ea_result *r)
{
    bool bitstring = r->bitstring_bits > 0;

    printf("file: %s\n", path);
    printf("samples: %zu, %u bit%s each, %u distinct value%s\n", r->samples, r->bits,
           r->bits == 1 ? "" : "s", r->symbols, r->symbols == 1 ? "" : "s");
    if (bitstring)
        printf("bitstring: %zu bits%s\n", r->bitstring_bits,
               r->bitstring_bits < (size_t)r->samples * r->bits ? " (truncated)" : "");
    if (r->symbols < 2) {
        printf("assessed min-entropy: 0 bits per sample (one value only)\n");
        return;
    }
    printf("%-30s %10s%s\n", "estimate (SP 800-90B)", "literal", bitstring ? "  bitstring" : "");
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
        char name[48];

        snprintf(name, sizeof(name), "%s (%s)", randd_ea_names[e], randd_ea_sections[e]);
        printf("%-30s", name);
        print_estimate(r->literal[e]);
        if (bitstring)
            print_estimate(r->bitstring[e]);
        printf("\n");
    }
    printf("H_original: %.8f bits per sample\n", r->h_original);
    if (bitstring)
        printf("H_bitstring: %.8f bits per bit (x %u = %.8f per sample)\n", r->h_bitstring,
               r->bits, r->bits * r->h_bitstring);
    printf("assessed min-entropy: %.8f bits per sample\n", r->h_assessed);
}

/* --- the command ---------------------------------------------------------------------------- */

static int run_assess(int argc, char **argv)
{
    struct progress progress = { isatty(STDERR_FILENO), -1, "" };
    unsigned long long bits = 0;
    unsigned flags = 0, width;
    const char *path = NULL;
    struct randd_ea_result r;
    bool show = progress.tty;
    uint8_t *samples;
    size_t n;
    int rc;

    for (int i = 1; i < argc; i++) {    /* the other modes parse their own arguments */
        if (!strcmp(argv[i], "--restart"))
            return run_assess_restart(argc, argv);
        if (!strcmp(argv[i], "--conditioning"))
            return run_assess_conditioning(argc, argv);
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bits") && i + 1 < argc) {
            if (!parse_count(argv[++i], 8, &bits) || bits == 0)
                return usage_error(&cmd_assess, "--bits: not a number from 1 to 8: %s", argv[i]);
        } else if (!strcmp(argv[i], "--truncate")) {
            flags |= RANDD_EA_TRUNCATE;
        } else if (!strcmp(argv[i], "--progress")) {
            show = true;
        } else if (!path && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) {
            path = argv[i];
        } else {
            return usage_error(&cmd_assess, "bad argument: %s", argv[i]);
        }
    }
    if (!path)
        return usage_error(&cmd_assess, "FILE is missing");
    if (!(samples = read_samples(path, &n))) {
        fprintf(stderr, "randctl: %s: %s\n", path, strerror(errno));
        return EXIT_FAILED;
    }
    width = randd_ea_width(samples, n);
    if (n == 0 || n > RANDD_EA_MAX_SAMPLES || (bits && width > bits)) {
        OPENSSL_clear_free(samples, n);
        if (n == 0)
            return usage_error(&cmd_assess, "%s: empty: no samples", path);
        if (n > RANDD_EA_MAX_SAMPLES)
            return usage_error(&cmd_assess, "%s: more than %u samples", path, RANDD_EA_MAX_SAMPLES);
        return usage_error(&cmd_assess, "%s: values up to %u bits wide, wider than --bits %llu",
                           path, width, bits);
    }
    if (n < RANDD_EA_MIN_SAMPLES)
        fprintf(stderr, "randctl: assess: warning: %zu samples; SP 800-90B 3.1.1 asks for at "
                "least %u\n", n, RANDD_EA_MIN_SAMPLES);
    if (bits && width < bits)
        fprintf(stderr, "randctl: assess: warning: the values need only %u bit%s, fewer than "
                "--bits %llu\n", width, width == 1 ? "" : "s", bits);
    rc = randd_ea_assess(samples, n, (unsigned)bits, flags, &r, show ? show_progress : NULL,
                         &progress);
    if (show && progress.tty)
        fprintf(stderr, "\r\033[K");
    OPENSSL_clear_free(samples, n);
    if (rc < 0)
        return fail("assess", rc);
    print_report(path, &r);
    return fflush(stdout) == 0 ? EXIT_OK : fail("assess", -EIO);
}

const struct command cmd_assess = {
    "assess", "assess FILE [--bits W] [--truncate] [--progress] | FILE --restart --h-initial H "
    "[--bits W] | --conditioning --vetted|--non-vetted N_IN N_OUT NW H_IN "
    "[H_PRIME|--conditioned-file FILE]  SP 800-90B min-entropy, restart tests, conditioning",
    run_assess,
};
