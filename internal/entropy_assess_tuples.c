/* SP 800-90B 6.3.5 (t-tuple) and 6.3.6 (LRS) from one suffix array. Owns the suffix array
 * (SA-IS), the LCP array and the tuple counts; the tracks and the minimum are
 * entropy_assess.c's.
 *
 * Both estimators count tuples: for each length t, the t-tuple estimate needs the count of
 * the most common t-tuple, and the LRS estimate the sum over distinct t-tuples of
 * C(count, 2). In the sorted suffixes, the suffixes that share a prefix of length t are one
 * run whose neighbours' LCPs are all >= t: an LCP interval. One left-to-right pass with a
 * stack visits every interval [lb, rb] with its LCP l and its parent's LCP lp; the
 * interval is the single tuple class, of rb - lb + 1 occurrences, for every t in (lp, l].
 * That is O(n) time, where counting every t separately would be O(n * LRS length), and
 * the LRS of a biased 1,000,000-bit source is a hundred bits long. */
#include "entropy_assess_internal.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TUPLE_MIN_COUNT 35    /* 6.3.5: t-tuples count up to the longest seen 35 times */

/* --- the suffix array: SA-IS ---------------------------------------------------------------- */

/* Nong, Zhang and Chan, "Two efficient algorithms for linear time suffix array
 * construction", IEEE Trans. Computers 60(10), 2011. A suffix is S-type when it is smaller
 * than the one after it, L-type when larger; an LMS position is an S-type one after an
 * L-type one. Sorting the LMS suffixes sorts everything: placed at the ends of their first
 * symbol's buckets, they induce the L-type suffixes left to right and the S-type ones right
 * to left. The LMS suffixes are sorted by naming their LMS substrings (sorted by that same
 * induction) and, while two names are equal, suffix-sorting the string of names.
 *
 * The text ends in a virtual sentinel at n, smaller than every symbol, so callers need not
 * reserve one. Level 0 reads bytes; deeper levels read the names, kept in the unused upper
 * half of sa (there are at most n / 2 LMS positions). */
struct sais_text {
    const uint8_t *t8;          /* level 0 */
    const int32_t *t32;         /* deeper levels */
    int32_t n, k;
    uint8_t *stype;             /* bit i: suffix i is S-type; bit n (the sentinel) is set */
};

static inline int32_t chr(const struct sais_text *t, int32_t i)
{
    return t->t8 ? t->t8[i] : t->t32[i];
}

static inline bool is_s(const struct sais_text *t, int32_t i)
{
    return t->stype[i >> 3] >> (i & 7) & 1;
}

static inline bool is_lms(const struct sais_text *t, int32_t i)
{
    return i > 0 && is_s(t, i) && !is_s(t, i - 1);
}

/* bkt[c]: where symbol c's bucket starts, or (ends) where it ends. */
static void bucket_bounds(const struct sais_text *t, int32_t *bkt, bool ends)
{
    int32_t sum = 0;

    memset(bkt, 0, (size_t)t->k * sizeof(*bkt));
    for (int32_t i = 0; i < t->n; i++)
        bkt[chr(t, i)]++;
    for (int32_t c = 0; c < t->k; c++) {
        sum += bkt[c];
        bkt[c] = ends ? sum : sum - bkt[c];
    }
}

/* From LMS suffixes at the ends of their buckets (the rest -1), sorts every suffix. */
static void induce(const struct sais_text *t, int32_t *sa, int32_t *bkt)
{
    int32_t n = t->n;

    bucket_bounds(t, bkt, false);
    sa[bkt[chr(t, n - 1)]++] = n - 1;       /* the sentinel sorts first and induces n - 1 */
    for (int32_t i = 0; i < n; i++)
        if (sa[i] > 0 && !is_s(t, sa[i] - 1))
            sa[bkt[chr(t, sa[i] - 1)]++] = sa[i] - 1;
    bucket_bounds(t, bkt, true);
    for (int32_t i = n - 1; i >= 0; i--)
        if (sa[i] > 0 && is_s(t, sa[i] - 1))
            sa[--bkt[chr(t, sa[i] - 1)]] = sa[i] - 1;
}

/* Whether the LMS substrings at a and b (each up to the next LMS position) are equal. */
static bool lms_substrings_equal(const struct sais_text *t, int32_t a, int32_t b)
{
    for (int32_t d = 0;; d++) {
        if (a + d == t->n || b + d == t->n)
            return false;                   /* the sentinel is unique */
        if (chr(t, a + d) != chr(t, b + d) || is_s(t, a + d) != is_s(t, b + d))
            return false;
        if (d > 0 && is_lms(t, a + d))      /* same types so far: b + d is LMS too */
            return true;
    }
}

static int sais(const uint8_t *t8, const int32_t *t32, int32_t *sa, int32_t n, int32_t k)
{
    struct sais_text t = { t8, t32, n, k, NULL };
    int32_t *bkt = NULL, *s1, n1 = 0, names = 0, prev = -1;
    int rc = 0;

    if (n == 1) {
        sa[0] = 0;
        return 0;
    }
    t.stype = calloc((size_t)n / 8 + 1, 1);
    bkt = malloc((size_t)k * sizeof(*bkt));
    if (!t.stype || !bkt) {
        rc = -ENOMEM;
        goto out;
    }
    t.stype[n >> 3] |= (uint8_t)(1u << (n & 7));
    for (int32_t i = n - 2; i >= 0; i--)     /* n - 1 is L-type: above the sentinel */
        if (chr(&t, i) < chr(&t, i + 1) || (chr(&t, i) == chr(&t, i + 1) && is_s(&t, i + 1)))
            t.stype[i >> 3] |= (uint8_t)(1u << (i & 7));

    /* Sort the LMS substrings: induce from the LMS suffixes in text order. */
    for (int32_t i = 0; i < n; i++)
        sa[i] = -1;
    bucket_bounds(&t, bkt, true);
    for (int32_t i = 1; i < n; i++)
        if (is_lms(&t, i))
            sa[--bkt[chr(&t, i)]] = i;
    induce(&t, sa, bkt);

    /* Name them in sorted order (equal substrings, equal names), each name at n1 + pos / 2,
     * then pack the names, in text order, into the top n1 entries: the reduced string. */
    for (int32_t i = 0; i < n; i++)
        if (is_lms(&t, sa[i]))
            sa[n1++] = sa[i];
    for (int32_t i = n1; i < n; i++)
        sa[i] = -1;
    for (int32_t i = 0; i < n1; i++) {
        if (prev < 0 || !lms_substrings_equal(&t, sa[i], prev))
            names++;
        prev = sa[i];
        sa[n1 + sa[i] / 2] = names - 1;
    }
    for (int32_t i = n - 1, j = n - 1; i >= n1; i--)
        if (sa[i] >= 0)
            sa[j--] = sa[i];
    s1 = sa + n - n1;

    /* Sort the LMS suffixes: by their names alone when all differ, else recursively. */
    if (names < n1) {
        if ((rc = sais(NULL, s1, sa, n1, names)) < 0)
            goto out;
    } else {
        for (int32_t i = 0; i < n1; i++)
            sa[s1[i]] = i;
    }

    /* Map ranks in the reduced string back to positions, place them, induce the rest. */
    for (int32_t i = 1, j = 0; i < n; i++)
        if (is_lms(&t, i))
            s1[j++] = i;
    for (int32_t i = 0; i < n1; i++)
        sa[i] = s1[sa[i]];
    for (int32_t i = n1; i < n; i++)
        sa[i] = -1;
    bucket_bounds(&t, bkt, true);
    for (int32_t i = n1 - 1; i >= 0; i--) {
        int32_t pos = sa[i];

        sa[i] = -1;
        sa[--bkt[chr(&t, pos)]] = pos;
    }
    induce(&t, sa, bkt);
out:
    free(t.stype);
    free(bkt);
    return rc;
}

int randd_ea_suffix_array(const uint8_t *s, int32_t n, unsigned k, int32_t *sa)
{
    if (n < 0 || k == 0 || k > 256)
        return -EINVAL;
    return n ? sais(s, NULL, sa, n, (int32_t)k) : 0;
}

/* --- LCP ------------------------------------------------------------------------------------ */

/* plcp[i]: the length of the common prefix of suffix i and the suffix sorted just before it
 * (0 for the first). The permuted LCP array by way of Phi (Karkkainen, Manzini and Puglisi,
 * "Permuted longest-common-prefix array", CPM 2009): in text order each value is at least
 * the previous one less 1, so the comparisons total O(n). Computed in place of Phi. */
static void permuted_lcp(const uint8_t *s, int32_t n, const int32_t *sa, int32_t *plcp)
{
    int32_t l = 0;

    plcp[sa[0]] = -1;
    for (int32_t i = 1; i < n; i++)
        plcp[sa[i]] = sa[i - 1];
    for (int32_t i = 0; i < n; i++) {
        int32_t j = plcp[i];

        if (j < 0) {
            plcp[i] = l = 0;
            continue;
        }
        while (i + l < n && j + l < n && s[i + l] == s[j + l])
            l++;
        plcp[i] = l;
        if (l > 0)
            l--;
    }
}

/* --- tuple counts --------------------------------------------------------------------------- */

/* For t = 1..v (v, the LRS length): most[t], the count of the most common t-tuple, and
 * pairs[t], the sum over distinct t-tuples of C(count, 2). Both arrays have v + 2 entries. */
struct tuple_counts {
    int32_t v;
    uint64_t *most, *pairs;
};

struct lcp_interval {
    int32_t lcp, lb;
};

static void count_interval(struct tuple_counts *c, int32_t lcp, int32_t parent, uint64_t size)
{
    uint64_t pairs = size * (size - 1) / 2;

    if (c->most[lcp] < size)
        c->most[lcp] = size;
    c->pairs[parent + 1] += pairs;          /* a difference array over t: added for t in */
    c->pairs[lcp + 1] -= pairs;             /* (parent, lcp], wrapping back to 0 above it */
}

/* Visits the LCP intervals bottom up with a stack (Abouelhoda, Kurtz and Ohlebusch,
 * "Replacing suffix trees with enhanced suffix arrays", J. Discrete Algorithms 2004). */
static int count_tuples(const int32_t *sa, const int32_t *plcp, int32_t n, struct tuple_counts *c)
{
    struct lcp_interval *stack;
    int32_t top = 0;

    c->v = 0;
    for (int32_t i = 0; i < n; i++)
        if (plcp[i] > c->v)
            c->v = plcp[i];
    stack = malloc(((size_t)c->v + 1) * sizeof(*stack));
    c->most = calloc((size_t)c->v + 2, sizeof(*c->most));
    c->pairs = calloc((size_t)c->v + 2, sizeof(*c->pairs));
    if (!stack || !c->most || !c->pairs) {
        free(stack);
        return -ENOMEM;
    }
    stack[0] = (struct lcp_interval){ 0, 0 };
    for (int32_t i = 1; i <= n; i++) {
        int32_t lcp = i < n ? plcp[sa[i]] : 0, lb = i - 1;

        while (lcp < stack[top].lcp) {
            struct lcp_interval done = stack[top--];
            int32_t parent = lcp > stack[top].lcp ? lcp : stack[top].lcp;

            count_interval(c, done.lcp, parent, (uint64_t)(i - done.lb));
            lb = done.lb;
        }
        if (lcp > stack[top].lcp)
            stack[++top] = (struct lcp_interval){ lcp, lb };
    }
    free(stack);
    for (int32_t t = c->v - 1; t >= 1; t--)         /* a t-tuple is as common as its longest */
        if (c->most[t] < c->most[t + 1])            /* extensions: the maximum over l >= t */
            c->most[t] = c->most[t + 1];
    for (int32_t t = 1; t <= c->v; t++)
        c->pairs[t] += c->pairs[t - 1];
    return 0;
}

/* --- the estimates -------------------------------------------------------------------------- */

/* -log2 of the 99% upper bound on p-hat, as 6.3.5 step 4 and 6.3.6 step 6 give it. */
static double upper_bound_entropy(long double p_hat, size_t n)
{
    long double pu = p_hat + EA_Z_L * sqrtl(p_hat * (1.0L - p_hat) / (long double)(n - 1));

    return (double)-log2l(pu > 1.0L ? 1.0L : pu);
}

/* 6.3.5: over t = 1..u-1, the t-tuples that occur at least 35 times, p-hat is the largest
 * (count / (n - t + 1))^(1/t). 6.3.6: over t = u..v, the largest
 * (sum C(count, 2) / C(n - t + 1, 2))^(1/t). Either is NAN when its range is empty. */
static void estimate(const struct tuple_counts *c, size_t n, double *t_tuple, double *lrs)
{
    long double p_max = -1.0L;
    int32_t u = 1;

    while (u <= c->v && c->most[u] >= TUPLE_MIN_COUNT)
        u++;
    for (int32_t t = 1; t < u; t++) {
        long double p = powl((long double)c->most[t] / (long double)(n - (size_t)t + 1),
                             1.0L / t);
        if (p > p_max)
            p_max = p;
    }
    if (u > 1)
        *t_tuple = upper_bound_entropy(p_max, n);
    p_max = 0.0L;
    for (int32_t t = u; t <= c->v; t++) {
        uint64_t m = n - (uint64_t)t;
        long double p = powl((long double)c->pairs[t] / (long double)(m * (m + 1) / 2), 1.0L / t);

        if (p > p_max)
            p_max = p;
    }
    if (u <= c->v)
        *lrs = upper_bound_entropy(p_max, n);
}

/* The suffix array of s[0..n) (2 <= n <= INT32_MAX) and its permuted LCP array, both
 * allocated here (suffixes_free wipes and frees them: they describe the samples), the progress
 * ticked after each. Returns 0, -ENOMEM or the suffix sort's error. */
static int suffixes(const uint8_t *s, size_t n, unsigned k, int32_t **sa, int32_t **plcp,
                    const struct ea_progress *p)
{
    int rc;

    *sa = malloc(n * sizeof(**sa));
    *plcp = malloc(n * sizeof(**plcp));
    rc = *sa && *plcp ? 0 : -ENOMEM;
    if (rc == 0)
        rc = randd_ea_suffix_array(s, (int32_t)n, k, *sa);
    if (rc == 0) {
        randd_ea_tick(p, 6, 10);
        permuted_lcp(s, (int32_t)n, *sa, *plcp);
        randd_ea_tick(p, 8, 10);
    }
    return rc;
}

static void suffixes_free(int32_t *sa, int32_t *plcp, size_t n)
{
    randd_ea_release(sa, sa ? n * sizeof(*sa) : 0);
    randd_ea_release(plcp, plcp ? n * sizeof(*plcp) : 0);
}

int randd_ea_tuples(const uint8_t *s, size_t n, unsigned k, double *t_tuple, double *lrs,
                    const struct ea_progress *p)
{
    struct tuple_counts c = { 0, NULL, NULL };
    int32_t *sa, *plcp;
    int rc;

    *t_tuple = *lrs = NAN;
    if (n < 2)
        return 0;
    if (n > INT32_MAX)
        return -E2BIG;
    rc = suffixes(s, n, k, &sa, &plcp, p);
    if (rc == 0)
        rc = count_tuples(sa, plcp, (int32_t)n, &c);
    if (rc == 0)
        estimate(&c, n, t_tuple, lrs);
    suffixes_free(sa, plcp, n);
    free(c.most);
    free(c.pairs);
    return rc;
}

/* --- the longest repeated substring alone (SP 800-90B 5.2.5, for entropy_iid.c) ------------- */

int randd_ea_longest_repeat(const uint8_t *s, size_t n, unsigned k, size_t *length)
{
    int32_t *sa, *plcp;
    int rc;

    *length = 0;
    if (n < 2)
        return 0;
    if (n > INT32_MAX)
        return -E2BIG;
    rc = suffixes(s, n, k, &sa, &plcp, NULL);
    if (rc == 0)
        for (size_t i = 0; i < n; i++)
            if ((size_t)plcp[i] > *length)
                *length = (size_t)plcp[i];
    suffixes_free(sa, plcp, n);
    return rc;
}
