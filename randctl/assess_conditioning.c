/* randctl assess --conditioning --vetted|--non-vetted N_IN N_OUT NW H_IN [H_PRIME |
 * --conditioned-file FILE]: the SP 800-90B 3.1.5 output entropy h_out of a conditioning
 * component, printed as NIST's ea_conditioning gives it. Owns the arguments, the conditioned
 * file's assessment (h' = its assessed min-entropy per bit) and the report; the arithmetic is
 * internal/entropy_conditioning.c's. Needs no daemon. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "entropy_assess.h"
#include "entropy_conditioning.h"
#include "randctl.h"

static int parse_bits(const char *what, const char *s, unsigned *v)
{
    unsigned long long n;

    if (!parse_count(s, 0xffffffffu, &n) || n == 0)
        return usage_error(&cmd_assess, "%s: not a number of bits from 1 to 4294967295: %s",
                           what, s);
    *v = (unsigned)n;
    return EXIT_OK;
}

static bool parse_real(const char *s, long double *v)
{
    char *end;

    errno = 0;
    *v = strtold(s, &end);
    return *s && !*end && errno == 0 && isfinite(*v);
}

/* h' of a conditioned file: its non-IID assessed min-entropy per bit, SP 800-90B 3.1.5.2's
 * "entropy per bit of the conditioned sequential dataset" (see randctl(1) for how this
 * differs from ea_conditioning -i). Returns EXIT_OK or an exit code, having said why. */
static int assess_conditioned(const char *path, long double *h_prime)
{
    FILE *f = fopen(path, "rb");
    struct randd_ea_result r;
    uint8_t *s = NULL;
    struct stat st;
    size_t n = 0;
    int rc = EXIT_OK;

    if (!f || fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "randctl: %s: %s\n", path, !f || errno ? strerror(errno) :
                "not a regular file");
        if (f)
            fclose(f);
        return EXIT_FAILED;
    }
    if (st.st_size == 0 || st.st_size > RANDD_EA_MAX_SAMPLES) {
        fclose(f);
        return usage_error(&cmd_assess, "--conditioned-file %s: %s", path,
                           st.st_size ? "more samples than assess takes" : "empty: no samples");
    }
    if (!(s = malloc((size_t)st.st_size))) {
        fclose(f);
        return fail("assess", -ENOMEM);
    }
    n = fread(s, 1, (size_t)st.st_size, f);
    if (ferror(f) || n == 0) {
        fprintf(stderr, "randctl: %s: %s\n", path, strerror(EIO));
        rc = EXIT_FAILED;
    } else if ((rc = randd_ea_assess(s, n, 0, 0, &r, NULL, NULL)) < 0) {
        rc = fail("assess", rc);
    } else {
        *h_prime = r.symbols < 2 ? 0.0L : (long double)r.h_assessed / r.bits;
        printf("conditioned file: %s: %zu samples of %u bit%s, assessed %.8f bits per sample\n",
               path, n, r.bits, r.bits == 1 ? "" : "s", r.h_assessed);
        if (*h_prime <= 0.0L) {
            fprintf(stderr, "randctl: assess: %s: one value only: the output has no entropy\n",
                    path);
            rc = EXIT_FAILED;
        }
    }
    fclose(f);
    OPENSSL_clear_free(s, (size_t)st.st_size);
    return rc;
}

int run_assess_conditioning(int argc, char **argv)
{
    static const char *const names[] = { "N_IN", "N_OUT", "NW", "H_IN", "H_PRIME" };
    const char *numbers[5], *file = NULL;
    struct randd_ea_conditioning c;
    unsigned n_in = 0, n_out = 0, nw = 0;
    long double h_in, h_prime = NAN;
    int vetted = -1, count = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--conditioning"))
            continue;
        if (!strcmp(argv[i], "--vetted") || !strcmp(argv[i], "--non-vetted")) {
            if (vetted >= 0)
                return usage_error(&cmd_assess, "--conditioning: one of --vetted and "
                                   "--non-vetted, once");
            vetted = !strcmp(argv[i], "--vetted");
        } else if (!strcmp(argv[i], "--conditioned-file") && i + 1 < argc && !file) {
            file = argv[++i];
        } else if (argv[i][0] != '-' && count < 5) {
            numbers[count++] = argv[i];
        } else {
            return usage_error(&cmd_assess, "--conditioning: bad argument: %s", argv[i]);
        }
    }
    if (vetted < 0)
        return usage_error(&cmd_assess, "--conditioning needs --vetted or --non-vetted");
    if (count < 4)
        return usage_error(&cmd_assess, "--conditioning: %s is missing", names[count]);
    if (vetted && (count > 4 || file))
        return usage_error(&cmd_assess, "--vetted takes no H_PRIME nor --conditioned-file");
    if (!vetted && (count == 5) == (file != NULL))
        return usage_error(&cmd_assess, "--non-vetted needs H_PRIME or --conditioned-file FILE "
                           "(one of them)");
    if ((rc = parse_bits("N_IN", numbers[0], &n_in)) ||
        (rc = parse_bits("N_OUT", numbers[1], &n_out)) ||
        (rc = parse_bits("NW", numbers[2], &nw)))
        return rc;
    if (!parse_real(numbers[3], &h_in) || h_in <= 0.0L || h_in > n_in)
        return usage_error(&cmd_assess, "H_IN: not a number above 0 and at most N_IN (%u): %s",
                           n_in, numbers[3]);
    if (count == 5 && (!parse_real(numbers[4], &h_prime) || h_prime <= 0.0L || h_prime > 1.0L))
        return usage_error(&cmd_assess, "H_PRIME: not a number above 0 and at most 1: %s",
                           numbers[4]);
    if (file && (rc = assess_conditioned(file, &h_prime)) != EXIT_OK)
        return rc;
    if ((rc = randd_ea_conditioning(vetted, n_in, n_out, nw, h_in, h_prime, &c)) < 0)
        return fail("assess", rc);

    printf("n_in: %u\nn_out: %u\nnw: %u\nh_in: %.19Lg\n", c.n_in, c.n_out, c.nw, c.h_in);
    if (!vetted)
        printf("h': %.19Lg\n", c.h_prime);
    printf("Output_Entropy (3.1.5.1.2): %.19Lg\n", c.output_entropy);
    if (!vetted)
        printf("0.999 * n_out: %.19Lg\nh' * n_out: %.19Lg\n", c.full_bound, c.h_prime_bound);
    printf("h_out (%s, %s): %.19Lg bits\n", vetted ? "vetted" : "non-vetted",
           vetted ? "3.1.5.1.1" : "3.1.5.2", c.h_out);
    return fflush(stdout) == 0 ? EXIT_OK : fail("assess", -EIO);
}
