/* randctl assess --report: one self-contained HTML page a person reads instead of the
 * figures: the verdict and what it rests on, a histogram of the samples, their
 * autocorrelation, each estimator against the claim, and the IID track's tests. Inline CSS
 * and SVG only: no script, no font, no image, nothing fetched, so it opens the same offline,
 * in a mail attachment or in a lab's archive.
 *
 * Layout: the verdict first, then one section a part, each written by a function of its own
 * from struct assess_report (sections[] below). A mode adds a section by adding its part to
 * the struct, one function, and a line in sections[] (and, if it bears on it, in verdict()).
 * The restart tests (section_restart) show each row's and column's most common value count
 * against X_cutoff and the row and column estimates against H_I. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "assess.h"
#include "randctl.h"

#ifndef RANDD_VERSION
#define RANDD_VERSION "0.1.0"
#endif

#define LAGS 32

/* The palette: calm colours, one accent per verdict. */
#define C_PASS  "#1a7f37"
#define C_FAIL  "#cf222e"
#define C_WARN  "#9a6700"
#define C_INFO  "#0969da"
#define C_BAR   "#54aeff"
#define C_MARK  "#e16f24"   /* lines and points in charts: never a verdict colour */
#define C_BAR2  "#8250df"
#define C_GRID  "#d8dee4"
#define C_BAND  "#b6e3ff"   /* the autocorrelation's significance band: light, yet seen */
#define C_MUTED "#57606a"

/* --- writing ------------------------------------------------------------------------------ */

/* The text of s, safe between tags and in attribute values. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)*s < 0x20)
                fputc('?', f);      /* a control character in a file name */
            else
                fputc(*s, f);
        }
    }
}

/* printf's text of fmt with the integer part of its first number grouped by thousands
 * (1,000,000 samples, not 1000000). Returns one of a few buffers used in turn, so that one
 * printf may take several. */
static const char *grouped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *grouped(const char *fmt, ...)
{
    static char ring[8][64];
    static unsigned next;
    char raw[48], *out = ring[next++ % 8];
    size_t start, digits, o = 0;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    start = strcspn(raw, "0123456789");
    digits = strspn(raw + start, "0123456789");
    for (size_t i = 0; raw[i] && o + 2 < sizeof(ring[0]); i++) {
        out[o++] = raw[i];
        if (i >= start && i + 1 < start + digits && (start + digits - i - 1) % 3 == 0)
            out[o++] = ',';
    }
    out[o] = '\0';
    return out;
}

static const char *const style =
    "*{box-sizing:border-box}"
    "body{margin:0;background:#f6f8fa;color:#1f2328;font:15px/1.5 system-ui,-apple-system,"
    "'Segoe UI','DejaVu Sans',sans-serif}"
    "main{max-width:1040px;margin:0 auto;padding:32px 24px 48px}"
    "h1{font-size:26px;margin:0 0 4px;font-weight:600}"
    "h2{font-size:18px;margin:0 0 12px;font-weight:600}"
    ".sub{color:" C_MUTED ";margin:0 0 24px}"
    ".card{background:#fff;border:1px solid " C_GRID ";border-radius:12px;padding:20px 24px;"
    "margin:0 0 20px;box-shadow:0 1px 3px rgba(31,35,40,.06)}"
    ".verdict{border-left:8px solid var(--c);display:flex;gap:24px;align-items:center}"
    ".verdict .big{font-size:30px;font-weight:700;color:var(--c);white-space:nowrap}"
    ".verdict ul{margin:6px 0 0;padding-left:18px}"
    ".grid{display:grid;grid-template-columns:1fr 1fr;gap:20px}"
    ".grid .card{margin:0 0 20px}"
    "table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}"
    "th,td{padding:5px 10px;text-align:right;border-bottom:1px solid #eaeef2}"
    "th:first-child,td:first-child{text-align:left}"
    "th{font-weight:600;color:" C_MUTED ";font-size:13px}"
    ".chip{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;"
    "font-weight:600;color:#fff}"
    ".pass{background:" C_PASS "}.fail{background:" C_FAIL "}.skip{background:" C_MUTED "}"
    ".within{background:#fff;color:" C_MUTED ";box-shadow:inset 0 0 0 1px " C_MUTED "}"
    ".note{color:" C_MUTED ";font-size:13px;margin:8px 0 0}"
    "svg{display:block;width:100%;height:auto}"
    "svg text{font:12px system-ui,'DejaVu Sans',sans-serif;fill:" C_MUTED "}"
    "svg text.axis-title{font-size:12px;font-weight:600;fill:#1f2328}"
    "footer{color:" C_MUTED ";font-size:12px;text-align:center}";

/* --- the figures the page draws ----------------------------------------------------------- */

/* r(k) = sum (x_i - m)(x_{i+k} - m) / sum (x_i - m)^2 for k = 1..LAGS; 0 when all are equal. */
static void autocorrelation(const uint8_t *s, size_t n, double *r)
{
    double mean = 0.0, var = 0.0;

    for (size_t i = 0; i < n; i++)
        mean += s[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (s[i] - mean) * (s[i] - mean);
    for (int k = 1; k <= LAGS; k++) {
        double c = 0.0;

        for (size_t i = 0; i + (size_t)k < n; i++)
            c += (s[i] - mean) * (s[i + k] - mean);
        r[k - 1] = var > 0 ? c / var : 0.0;
    }
}

/* --- the verdict -------------------------------------------------------------------------- */

struct verdict {
    const char *headline, *colour;
    char reasons[7][240];
    int count;
};

static void reason(struct verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void reason(struct verdict *v, const char *fmt, ...)
{
    va_list ap;

    if (v->count >= (int)(sizeof(v->reasons) / sizeof(v->reasons[0])))
        return;
    va_start(ap, fmt);
    vsnprintf(v->reasons[v->count++], sizeof(v->reasons[0]), fmt, ap);
    va_end(ap);
}

/* The figure a source may be credited with by this assessment: the IID track's MCV when the
 * samples passed as IID, else the non-IID minimum; NAN when neither says. */
static double credited(const struct assess_report *r)
{
    if (r->restart)
        return r->restart->h_restart;
    if (r->iid && r->iid->iid)
        return r->iid->h_assessed;
    if (r->non_iid)
        return r->non_iid->h_assessed;
    return NAN;
}

/* The restart tests' verdict: the sanity check, then the validation (SP 800-90B 3.1.4). */
static void restart_verdict(const struct randd_ea_restart_result *d, struct verdict *v)
{
    bool passed = d->symbols >= 2 && d->sanity_passed && d->validation_passed;

    v->headline = passed ? "Restart tests passed" : "Restart tests failed";
    v->colour = passed ? C_PASS : C_FAIL;
    if (d->symbols < 2) {
        reason(v, "One value only in the restart matrix: no entropy");
        return;
    }
    reason(v, "Sanity check (3.1.4.3) %s: the most common value's count is at most %u in "
           "every row and %u in every column, against X_cutoff %u for H_I = %.4f (%u rows, "
           "%u columns over)", d->sanity_passed ? "passed" : "failed", d->x_rows, d->x_cols,
           d->x_cutoff, d->h_initial, d->rows_over, d->cols_over);
    if (!d->sanity_passed) {
        reason(v, "The row and column assessments do not run once the sanity check fails, "
               "as in ea_restart");
        return;
    }
    reason(v, "Rows (restarts): H_r = %.4f bits per sample; columns (the i-th sample of "
           "every restart): H_c = %.4f", d->h_r, d->h_c);
    reason(v, "Validation (3.1.4.2) %s: min(H_r, H_c) = %.4f %s H_I/2 = %.4f",
           d->validation_passed ? "passed" : "failed", fmin(d->h_r, d->h_c),
           d->validation_passed ? ">=" : "<", d->h_initial / 2);
    if (passed)
        reason(v, "Validated min-entropy min(H_r, H_c, H_I) = %.4f bits per sample",
               d->h_restart);
}

/* The IID track's reasons when it passed or is undecided. */
static void iid_reasons(const struct randd_iid_result *d, struct verdict *v)
{
    reason(v, "Chi-square tests passed (p = %.4f and %.4f, each at least 0.001)",
           d->independence.p_value, d->goodness_of_fit.p_value);
    reason(v, "Longest repeated substring: %s symbols, as IID data would give (Pr = %.4f)",
           grouped("%zu", d->lrs_length), d->lrs_probability);
    if (d->permutations_ran)
        reason(v, "Permutation tests: 19 of 19 statistics within their shuffles (%s of at "
               "most %s)", grouped("%u", d->shuffles), grouped("%u", RANDD_IID_PERMUTATIONS));
    else
        reason(v, "Permutation tests not run (--no-permutations): chi-square and LRS alone "
               "cannot show the samples IID");
    if (d->iid)
        reason(v, "Credited as IID: the most common value gives %.4f bits per sample",
               d->h_assessed);
    else
        reason(v, "Not creditable until the permutation tests run; or assess the samples "
               "with the non-IID estimators (randctl assess without --iid)");
}

/* The reasons of a page whose samples failed the IID tests: the failing tests first, by
 * name, then the rest, worded so that nothing in the verdict reads as a pass. */
static void iid_failed_reasons(const struct randd_iid_result *d, struct verdict *v)
{
    char names[160] = "", within[200] = "";
    unsigned failed = 0;
    int len = 0;

    if (d->independence.p_value < 0.001)
        reason(v, "Failed: chi-square independence (5.2.%d), p = %.3g, below 0.001",
               d->binary ? 3 : 1, d->independence.p_value);
    if (d->goodness_of_fit.p_value < 0.001)
        reason(v, "Failed: chi-square goodness of fit (5.2.%d), p = %.3g, below 0.001",
               d->binary ? 4 : 2, d->goodness_of_fit.p_value);
    if (!d->lrs_passed)
        reason(v, "Failed: longest repeated substring (5.2.5), %s symbols, too long for "
               "independent samples (Pr = %.3g)", grouped("%zu", d->lrs_length),
               d->lrs_probability);
    for (int i = 0; d->permutations_ran && i < RANDD_IID_STATISTICS; i++)
        if (!randd_iid_statistic_passed(d->counts[i]) && ++failed <= 4 &&
            len < (int)sizeof(names))
            len += snprintf(names + len, sizeof(names) - len, "%s%s", failed > 1 ? ", " : "",
                            randd_iid_names[i]);
    if (failed)
        reason(v, "Failed: %u of 19 permutation statistics (5.1): %s%s", failed, names,
               failed > 4 ? ", ..." : "");
    len = 0;
    if (d->independence.p_value >= 0.001)
        len += snprintf(within + len, sizeof(within) - len, "chi-square independence");
    if (d->goodness_of_fit.p_value >= 0.001 && len < (int)sizeof(within))
        len += snprintf(within + len, sizeof(within) - len, "%schi-square goodness of fit",
                        len ? ", " : "");
    if (d->lrs_passed && len < (int)sizeof(within))
        len += snprintf(within + len, sizeof(within) - len, "%slongest repeated substring",
                        len ? ", " : "");
    if (d->permutations_ran && failed < RANDD_IID_STATISTICS && len < (int)sizeof(within))
        snprintf(within + len, sizeof(within) - len, "%s%u permutation statistics",
                 len ? ", " : "", RANDD_IID_STATISTICS - failed);
    if (*within)
        reason(v, "Within bounds: %s. One failure is enough: these do not outweigh it", within);
    if (!d->permutations_ran)
        reason(v, d->permutations_stopped ? "Permutation tests stopped once the verdict was "
               "settled (--stop-when-settled)" : "Permutation tests not run "
               "(--no-permutations)");
    reason(v, "Not creditable: assess the samples with the non-IID estimators (randctl "
           "assess without --iid)");
}

static void verdict(const struct assess_report *r, struct verdict *v)
{
    double h = credited(r);

    memset(v, 0, sizeof(*v));
    if (r->restart) {
        restart_verdict(r->restart, v);
        return;
    }
    if (r->iid) {
        const struct randd_iid_result *d = r->iid;

        v->headline = d->iid ? "IID" : d->chi_square_passed && d->lrs_passed &&
                      !d->permutations_ran ? "Undecided" : "Not IID";
        v->colour = d->iid ? C_PASS : strcmp(v->headline, "Undecided") ? C_FAIL : C_WARN;
        if (!d->iid && !strcmp(v->headline, "Not IID"))
            iid_failed_reasons(d, v);
        else
            iid_reasons(d, v);
    } else if (r->non_iid) {
        int lowest = 0;

        v->headline = "Assessed";
        v->colour = C_INFO;
        for (int e = 0; e < RANDD_EA_ESTIMATORS; e++)
            if (!isnan(r->non_iid->literal[e]) &&
                (isnan(r->non_iid->literal[lowest]) ||
                 r->non_iid->literal[e] < r->non_iid->literal[lowest]))
                lowest = e;
        reason(v, "Min-entropy %.4f bits per sample: the least of the SP 800-90B non-IID "
               "estimators (6.3), out of %u possible", h, r->bits);
        if (!isnan(r->non_iid->literal[lowest]))
            reason(v, "Lowest on the samples: %s (%s), %.4f bits per sample",
                   randd_ea_names[lowest], randd_ea_sections[lowest],
                   r->non_iid->literal[lowest]);
        if (!isnan(r->non_iid->h_bitstring))
            reason(v, "Bitstring track: %.4f bits per bit, %.4f per sample",
                   r->non_iid->h_bitstring, r->non_iid->h_bitstring * r->bits);
    }
    if (!isnan(r->claim) && !isnan(h)) {
        bool held = r->claim <= h + 1e-12;

        reason(v, held ? "The claim of %.4f bits per sample is within the %.4f assessed" :
               "The claim of %.4f bits per sample exceeds the %.4f assessed", r->claim, h);
        if (!held) {
            v->headline = "Claim not supported";
            v->colour = C_FAIL;
        } else if (!r->iid) {
            v->headline = "Claim supported";
            v->colour = C_PASS;
        }
    }
    if (!isnan(r->claim) && isnan(h))
        reason(v, "The claim of %.4f bits per sample cannot rest on this track: the samples "
               "are not shown IID", r->claim);
    if (r->n < RANDD_EA_MIN_SAMPLES)
        reason(v, "Only %s samples: SP 800-90B 3.1.1 asks for at least %s",
               grouped("%zu", r->n), grouped("%u", RANDD_EA_MIN_SAMPLES));
}

static void section_verdict(FILE *f, const struct assess_report *r)
{
    struct verdict v;

    verdict(r, &v);
    fprintf(f, "<section class=\"card verdict\" id=\"verdict\" style=\"--c:%s\">"
               "<div class=\"big\">%s</div><div><strong>What it rests on</strong><ul>",
            v.colour, v.headline);
    for (int i = 0; i < v.count; i++) {
        fputs("<li>", f);
        put_escaped(f, v.reasons[i]);
        fputs("</li>", f);
    }
    fputs("</ul></div></section>\n", f);
}

/* --- the samples -------------------------------------------------------------------------- */

/* The step between an axis's ticks: 1, 2 or 5 times a power of ten, so that about `steps`
 * steps cover top (ticks at 0, 200k, 400k, 600k; never at 158, 317, 475). */
static double nice_step(double top, int steps)
{
    double raw = top / steps, unit = pow(10, floor(log10(raw))), f = raw / unit;

    return unit * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
}

/* An axis's title: under the x axis, centred at (x, y); or up the y axis, turned. The class
 * lets test_report.sh find every axis's title. */
static void axis_title(FILE *f, char axis, double x, double y, const char *title)
{
    if (axis == 'y')
        fprintf(f, "<text class=\"axis-title y\" text-anchor=\"middle\" "
                   "transform=\"translate(%.1f %.1f) rotate(-90)\">%s</text>", x, y, title);
    else
        fprintf(f, "<text class=\"axis-title x\" x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">%s</text>", x, y, title);
}

/* A tick label of the x axis: a value at x, centred under it. */
static void x_tick(FILE *f, double x, double y, const char *label)
{
    fprintf(f, "<text class=\"tick x\" x=\"%.2f\" y=\"%.0f\" text-anchor=\"middle\">%s"
               "</text>", x, y, label);
}

/* A count as a short label that fits left of the axis: 750, 12k, 1.5M. */
static void format_count(char *out, size_t len, double c)
{
    if (c >= 1e6)
        snprintf(out, len, "%.*fM", fmod(c, 1e6) ? 1 : 0, c / 1e6);
    else if (c >= 1e4)
        snprintf(out, len, "%.*fk", fmod(c, 1e3) ? 1 : 0, c / 1e3);
    else
        snprintf(out, len, "%s", grouped("%.0f", c));
}

static void section_histogram(FILE *f, const struct assess_report *r)
{
    const double W = 480, H = 260, left = 62, bottom = 46, top = 12;
    unsigned values = 1u << r->bits;
    size_t count[256] = { 0 }, most = 1;
    double expected = (double)r->n / values, bar = (W - left - 8) / values, scale, step, axis;
    double value_step = fmax(1, nice_step(values - 1, values > 16 ? 6 : 4));

    for (size_t i = 0; i < r->n; i++)
        count[r->samples[i]]++;
    for (unsigned v = 0; v < values; v++)
        most = count[v] > most ? count[v] : most;
    step = nice_step(fmax((double)most, expected) * 1.05, 4);
    axis = step * ceil(fmax((double)most, expected) * 1.05 / step);
    scale = (H - bottom - top) / axis;
    fprintf(f, "<section class=\"card\"><h2>Histogram of the samples</h2>"
               "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"histogram\">", W, H);
    for (double c = 0; c <= axis * (1 + 1e-9); c += step) {    /* grid and count labels */
        double y = H - bottom - c * scale;
        char label[16];

        format_count(label, sizeof(label), c);
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"" C_GRID
                   "\"/><text class=\"tick y\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s"
                   "</text>", left, W - 8, y, y, left - 6, y + 4, label);
    }
    for (unsigned v = 0; v < values; v++) {
        double h = count[v] * scale;

        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"" C_BAR
                   "\"><title>value %u: %s</title></rect>", left + v * bar + bar * 0.08,
                H - bottom - h, fmax(bar * 0.84, 0.6), h, v, grouped("%zu", count[v]));
    }
    for (double v = 0; v <= values - 1; v += value_step) {
        char label[16];

        snprintf(label, sizeof(label), "%.0f", v);
        x_tick(f, left + (v + 0.5) * bar, H - bottom + 16, label);
    }
    axis_title(f, 'x', left + (W - 8 - left) / 2, H - 6, "sample value");
    axis_title(f, 'y', 14, top + (H - bottom - top) / 2, "samples with the value");
    fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"" C_MARK "\" "
               "stroke-dasharray=\"5 4\" stroke-width=\"1.5\"/>", left, W - 8,
            H - bottom - expected * scale, H - bottom - expected * scale);
    fprintf(f, "</svg><p class=\"note\">%s samples of %u bit%s; the dashed line is the count "
               "each of the %u values would have if all were equally likely.</p></section>\n",
            grouped("%zu", r->n), r->bits, r->bits == 1 ? "" : "s", values);
}

/* The y axis spans +-range, at most 4 times the band (rounded up to a round value), so the
 * band stays a visible strip however strong the correlation: a lag beyond the axis is drawn at
 * its edge as a triangle and labelled with its value. */
static void section_autocorrelation(FILE *f, const struct assess_report *r)
{
    const double W = 480, H = 260, left = 62, bottom = 46, top = 14;
    double rk[LAGS], band = 2.0 / sqrt((double)r->n), range = band * 2.5, mid, step, scale;
    bool clipped = false;
    int largest = 0;

    autocorrelation(r->samples, r->n, rk);
    for (int k = 0; k < LAGS; k++) {
        range = fmax(range, fabs(rk[k]) * 1.15);
        largest = fabs(rk[k]) > fabs(rk[largest]) ? k : largest;
    }
    range = fmin(range, band * 4);
    range = 2 * nice_step(2 * range, 4);    /* grid lines at round values: +-range/2, +-range */
    scale = (H - bottom - top) / 2 / range;
    mid = top + (H - bottom - top) / 2;
    step = (W - left - 8) / LAGS;
    fprintf(f, "<section class=\"card\"><h2>Autocorrelation, lags 1 to %d</h2>"
               "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"autocorrelation\">",
            LAGS, W, H);
    fprintf(f, "<rect class=\"band\" x=\"%.0f\" y=\"%.2f\" width=\"%.0f\" height=\"%.2f\" "
               "fill=\"" C_BAND "\"/>", left, mid - band * scale, W - 8 - left,
            2 * band * scale);
    for (int g = -2; g <= 2; g++) {
        double v = range * g / 2, y = mid - v * scale;

        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
                   "<text class=\"tick y\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>",
                left, W - 8, y, y, g ? C_GRID : C_MUTED, left - 6, y + 4, v);
    }
    for (int k = 0; k < LAGS; k++) {
        double x = left + (k + 0.5) * step, shown = fmax(-range, fmin(range, rk[k]));
        double y = mid - shown * scale;
        const char *c = fabs(rk[k]) > band ? C_MARK : C_BAR2;

        fprintf(f, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
                   "stroke-width=\"2\"/>", x, x, mid, y, c);
        if (shown != rk[k]) {       /* off the axis: a triangle pointing on, at the edge */
            double d = rk[k] > 0 ? -1 : 1;

            clipped = true;
            fprintf(f, "<path d=\"M%.2f %.2f l-4 %.0f h8 z\" fill=\"%s\"><title>lag %d: "
                       "%.5f</title></path>", x, y + 6 * d, -6 * d, c, k + 1, rk[k]);
        } else {
            fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"><title>lag %d: "
                       "%.5f</title></circle>", x, y, c, k + 1, rk[k]);
        }
        if ((k + 1) % 5 == 0)
            fprintf(f, "<text class=\"tick x\" x=\"%.2f\" y=\"%.0f\" text-anchor=\"middle\">%d"
                       "</text>", x, H - bottom + 16, k + 1);
    }
    axis_title(f, 'x', left + (W - 8 - left) / 2, H - 6, "lag k (samples apart)");
    axis_title(f, 'y', 14, mid, "autocorrelation r(k)");
    fprintf(f, "</svg><p class=\"note\">The shaded band is &plusmn;2/&radic;n = &plusmn;%.4f: "
               "about 95%% of lags of independent samples fall inside it; orange points fall "
               "outside.", band);
    if (clipped)
        fprintf(f, " Triangles at the edge are lags beyond the axis: the largest is r(%d) = "
                   "%.4f.", largest + 1, rk[largest]);
    fputs("</p></section>\n", f);
}

/* --- the estimators against the claim ----------------------------------------------------- */

struct bar {
    char label[64];
    double h;           /* bits per sample */
};

/* A dashed line across the bars at value v, labelled above the chart ("claimed 3.500",
 * "H_I = 0.950"). */
struct mark {
    double v;
    char label[32];
};

/* Bars of bits per sample, the one equal to `assessed` in amber (none when it is NAN), the
 * others in `colour`; an x axis from 0 to max with round ticks. */
static void bars_chart(FILE *f, const struct bar *b, int count, double max,
                       const struct mark *marks, int nmarks, double assessed,
                       const char *colour)
{
    const double W = 960, left = 250, right = 70, row = 26, top = 24;
    double H = top + count * row + 52, scale = (W - left - right) / max;
    double step = nice_step(max, 8), base = top + count * row + 6;

    fprintf(f, "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"estimators\">", W, H);
    for (double v = 0; v <= max * (1 + 1e-9); v += step) {
        double x = left + v * scale;
        char label[16];

        snprintf(label, sizeof(label), "%g", v);
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"" C_GRID
                   "\"/>", x, x, top, base);
        x_tick(f, x, base + 16, label);
    }
    for (int i = 0; i < count; i++) {
        double y = top + i * row, w = fmax(b[i].h, 0) * scale;
        bool lowest = fabs(b[i].h - assessed) < 1e-12;

        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\" style=\"fill:#1f2328\">",
                left - 10, y + 17);
        put_escaped(f, b[i].label);
        fprintf(f, "</text><rect x=\"%.0f\" y=\"%.0f\" width=\"%.2f\" height=\"18\" rx=\"3\" "
                   "fill=\"%s\"/><text x=\"%.2f\" y=\"%.0f\">%.4f</text>", left, y + 4, w,
                lowest ? C_WARN : colour, left + w + 6, y + 17, b[i].h);
    }
    for (int m = 0; m < nmarks; m++) {
        double x = left + marks[m].v * scale;

        fprintf(f, "<line class=\"mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" "
                   "stroke=\"" C_MARK "\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>"
                   "<text class=\"mark\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" "
                   "style=\"fill:" C_MARK ";font-weight:600\">%s</text>", x, x, top - 4, base,
                x, top - 8, marks[m].label);
    }
    axis_title(f, 'x', left + (W - left - right) / 2, H - 6, "bits per sample");
    axis_title(f, 'y', 14, top + count * row / 2, "estimator");
    fputs("</svg>", f);
}

/* The estimates on their own, or against the claim when one was made: without --claim the
 * card says nothing of a claim. On samples that failed the IID tests the IID track's figures
 * credit nothing, so they are drawn grey, none of them picked out as assessed. */
static void section_estimators(FILE *f, const struct assess_report *r)
{
    struct bar b[2 * RANDD_EA_ESTIMATORS + 2];
    struct mark claim = { r->claim, "" };
    double assessed = credited(r);
    bool iid_failed = r->iid && !r->iid->iid && !r->non_iid;
    bool bitstring = false;
    int count = 0;
    char times[48] = "";

    if (r->non_iid) {
        const struct randd_ea_result *e = r->non_iid;

        for (int i = 0; i < RANDD_EA_ESTIMATORS; i++)
            if (!isnan(e->literal[i])) {
                snprintf(b[count].label, sizeof(b[0].label), "%s (%s)", randd_ea_names[i],
                         randd_ea_sections[i]);
                b[count++].h = e->literal[i];
            }
        for (int i = 0; i < RANDD_EA_ESTIMATORS; i++)
            if (!isnan(e->bitstring[i])) {
                snprintf(b[count].label, sizeof(b[0].label), "bitstring %s x %u",
                         randd_ea_names[i], r->bits);
                b[count++].h = e->bitstring[i] * r->bits;
                bitstring = true;
            }
    }
    if (r->iid) {
        snprintf(b[count].label, sizeof(b[0].label), "IID: H_original (MCV)");
        b[count++].h = r->iid->h_original;
        if (!isnan(r->iid->h_bitstring)) {
            snprintf(b[count].label, sizeof(b[0].label), "IID: H_bitstring x %u", r->bits);
            b[count++].h = r->iid->h_bitstring * r->bits;
            bitstring = true;
        }
    }
    if (!count)
        return;
    if (bitstring)
        snprintf(times, sizeof(times), " (the bitstring figures times %u)", r->bits);
    if (isnan(r->claim)) {
        fputs("<section class=\"card\" id=\"estimates\"><h2>Entropy estimates</h2>", f);
    } else {
        snprintf(claim.label, sizeof(claim.label), "claimed %.3f", r->claim);
        fprintf(f, "<section class=\"card\" id=\"claim\"><h2>Each estimate against the "
                   "claim of %.4g bits per sample</h2>", r->claim);
    }
    bars_chart(f, b, count, r->bits, &claim, !isnan(r->claim), iid_failed ? NAN : assessed,
               iid_failed ? C_MUTED : C_BAR);
    fprintf(f, "<p class=\"note\">Bits per sample%s. %s%s</p></section>\n", times,
            iid_failed ? "The samples failed the IID tests, so these figures credit nothing; "
            "the non-IID estimators (randctl assess without --iid) give the figure to use." :
            "The amber bar is the lowest, the figure assessed.",
            isnan(r->claim) ? "" : " The dashed orange line is the claim.");
}

/* --- the IID track ------------------------------------------------------------------------ */

/* A test's result: 1 pass, 0 fail, -1 not run. A pass is green only on a page whose samples
 * are IID: on any other a wall of green chips would read as the verdict, so there a pass is
 * drawn plain. */
static void chip(FILE *f, int state, bool iid)
{
    fprintf(f, "<span class=\"chip %s\">%s</span>",
            state > 0 ? (iid ? "pass" : "within") : state ? "skip" : "fail",
            state > 0 ? "pass" : state ? "not run" : "fail");
}

static void section_iid(FILE *f, const struct assess_report *r)
{
    const struct randd_iid_result *d = r->iid;

    if (!d)
        return;
    fputs("<section class=\"card\"><h2>IID tests (SP 800-90B section 5)</h2><table>"
          "<tr><th>test</th><th>statistic</th><th>degrees of freedom</th><th>p-value</th>"
          "<th>result</th></tr>", f);
    fprintf(f, "<tr><td>chi-square independence (5.2.%d)</td><td>%s</td><td>%s</td>"
               "<td>%.6f</td><td>", d->binary ? 3 : 1, grouped("%.4f", d->independence.score),
            grouped("%d", d->independence.df), d->independence.p_value);
    chip(f, d->independence.p_value >= 0.001, d->iid);
    fprintf(f, "</td></tr><tr><td>chi-square goodness of fit (5.2.%d)</td><td>%s</td>"
               "<td>%s</td><td>%.6f</td><td>", d->binary ? 4 : 2,
            grouped("%.4f", d->goodness_of_fit.score), grouped("%d", d->goodness_of_fit.df),
            d->goodness_of_fit.p_value);
    chip(f, d->goodness_of_fit.p_value >= 0.001, d->iid);
    fprintf(f, "</td></tr><tr><td>longest repeated substring (5.2.5)</td><td>length %s</td>"
               "<td>P_col %.6f</td><td>%.6f</td><td>", grouped("%zu", d->lrs_length), d->lrs_p_col,
            d->lrs_probability);
    chip(f, d->lrs_passed, d->iid);
    fputs("</td></tr></table>", f);

    fputs("<h2 style=\"margin-top:20px\">Permutation tests (5.1)</h2><table><tr>"
          "<th>statistic</th><th>on the data</th><th>shuffles above</th><th>equal</th>"
          "<th>below</th><th>result</th></tr>", f);
    for (int i = 0; i < RANDD_IID_STATISTICS; i++) {
        const unsigned *c = d->counts[i];

        fprintf(f, "<tr><td>%s</td><td>%s</td>", randd_iid_names[i],
                grouped("%.10g", d->statistics[i]));
        if (d->permutations_ran)
            fprintf(f, "<td>%s</td><td>%s</td><td>%s</td><td>", grouped("%u", c[0]),
                    grouped("%u", c[1]), grouped("%u", c[2]));
        else
            fputs("<td>-</td><td>-</td><td>-</td><td>", f);
        chip(f, d->permutations_ran ? randd_iid_statistic_passed(c) : -1, d->iid);
        fputs("</td></tr>", f);
    }
    fputs("</table><p class=\"note\">A statistic passes once more than 5 shuffles came out "
          "at or above it and more than 5 at or below it", f);
    if (d->permutations_ran)
        fprintf(f, "; %s shuffles were needed (of at most %s).", grouped("%u", d->shuffles),
                grouped("%u", RANDD_IID_PERMUTATIONS));
    else
        fputs("; the shuffles did not run.", f);
    if (d->permutations_ran) {     /* the seed is no secret: it only orders the shuffles */
        fputs(" The shuffles' seed, which <code>randctl assess --iid --seed</code> takes to "
              "repeat these counts: <code style=\"overflow-wrap:anywhere\">", f);
        for (int i = 0; i < RANDD_IID_SEED_BYTES; i++)
            fprintf(f, "%02x", d->seed[i]);
        fputs("</code>.", f);
    }
    fputs("</p></section>\n", f);
}

/* --- the page ----------------------------------------------------------------------------- */

typedef void section_fn(FILE *f, const struct assess_report *r);

static void section_samples(FILE *f, const struct assess_report *r)
{
    fputs("<div class=\"grid\">", f);
    section_histogram(f, r);
    section_autocorrelation(f, r);
    fputs("</div>\n", f);
}

/* --- the restart tests ------------------------------------------------------------------- */

/* Each of the 1,000 rows' (or columns') most common value count, as a bar, against the
 * cutoff: a bar over it is drawn in the failing colour. */
static void sanity_chart(FILE *f, const char *what, const char *x_title,
                         const uint16_t *counts, unsigned x_cutoff)
{
    const double W = 480, H = 230, left = 62, right = 22, bottom = 46, top = 10;
    const unsigned N = RANDD_EA_RESTART_SAMPLES;
    double most = x_cutoff, bar = (W - left - right) / N, scale, cut, step, axis, index_step;

    for (unsigned i = 0; i < N; i++)
        most = counts[i] > most ? counts[i] : most;
    step = nice_step(most * 1.08, 4);
    axis = step * ceil(most * 1.08 / step);
    index_step = nice_step(N, 5);
    scale = (H - bottom - top) / axis;
    cut = H - bottom - x_cutoff * scale;
    fprintf(f, "<section class=\"card\"><h2>Most common value, each %s</h2>"
               "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"%s\">", what, W, H,
            what);
    for (double c = 0; c <= axis * (1 + 1e-9); c += step) {
        double y = H - bottom - c * scale;
        char label[16];

        format_count(label, sizeof(label), c);
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"" C_GRID
                   "\"/><text class=\"tick y\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s"
                   "</text>", left, W - right, y, y, left - 6, y + 4, label);
    }
    for (unsigned i = 0; i < N; i++)
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>",
                left + i * bar, H - bottom - counts[i] * scale,
                counts[i] > x_cutoff ? fmax(bar, 3.0) : fmax(bar, 0.4),
                counts[i] * scale, counts[i] > x_cutoff ? C_FAIL : C_BAR);
    fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"" C_MARK "\" "
               "stroke-dasharray=\"5 4\" stroke-width=\"1.5\"/><text x=\"%.0f\" y=\"%.1f\" "
               "text-anchor=\"end\" style=\"fill:" C_MARK ";font-weight:600\">X_cutoff %u"
               "</text>", left, W - right, cut, cut, W - right - 2, cut - 4, x_cutoff);
    for (double i = index_step; i <= N; i += index_step) {
        char label[16];

        snprintf(label, sizeof(label), "%s", grouped("%.0f", i));
        x_tick(f, left + (i - 0.5) * bar, H - bottom + 16, label);
    }
    axis_title(f, 'x', left + (W - right - left) / 2, H - 6, x_title);
    axis_title(f, 'y', 14, top + (H - bottom - top) / 2, "most common value's count");
    fputs("</svg></section>", f);
}

static void section_restart(FILE *f, const struct assess_report *r)
{
    const struct randd_ea_restart_result *d = r->restart;
    struct bar b[2 * RANDD_EA_ESTIMATORS];
    int count = 0;

    if (!d || d->symbols < 2)
        return;
    fputs("<div class=\"grid\">", f);
    sanity_chart(f, "row (restart)", "row: the restart", d->row_max, d->x_cutoff);
    sanity_chart(f, "column (i-th sample)", "column: the sample's place in each restart",
                 d->col_max, d->x_cutoff);
    fputs("</div>\n", f);
    fprintf(f, "<section class=\"card\"><h2>Restart tests (SP 800-90B 3.1.4)</h2><table>"
               "<tr><th>figure</th><th>rows</th><th>columns</th></tr>"
               "<tr><td>most common value's count, at most (X_cutoff %u)</td><td>%u</td>"
               "<td>%u</td></tr><tr><td>over X_cutoff</td><td>%u</td><td>%u</td></tr>",
            d->x_cutoff, d->x_rows, d->x_cols, d->rows_over, d->cols_over);
    if (d->sanity_passed) {
        for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
            if (isnan(d->rows.literal[e]) && isnan(d->cols.literal[e]))
                continue;
            fprintf(f, "<tr><td>%s (%s)</td><td>%.4f</td><td>%.4f</td></tr>",
                    randd_ea_names[e], randd_ea_sections[e], d->rows.literal[e],
                    d->cols.literal[e]);
            snprintf(b[count].label, sizeof(b[0].label), "rows: %s", randd_ea_names[e]);
            b[count++].h = d->rows.literal[e];
            snprintf(b[count].label, sizeof(b[0].label), "columns: %s", randd_ea_names[e]);
            b[count++].h = d->cols.literal[e];
        }
        fprintf(f, "<tr><td><strong>H_r, H_c</strong></td><td><strong>%.4f</strong></td>"
                   "<td><strong>%.4f</strong></td></tr>", d->h_r, d->h_c);
    }
    fprintf(f, "</table><p class=\"note\">alpha = %.6g: the chance that a row or column of "
               "data with H_I = %.4f bits per sample goes over X_cutoff, so that all 2,000 pass "
               "99%% of the time. X_cutoff is the exact quantile, where NIST's ea_restart "
               "simulates it.</p>", d->alpha, d->h_initial);
    if (count) {
        struct mark marks[2] = { { d->h_initial, "" }, { d->h_initial / 2, "" } };

        snprintf(marks[0].label, sizeof(marks[0].label), "H_I = %.3f", d->h_initial);
        snprintf(marks[1].label, sizeof(marks[1].label), "H_I/2 = %.3f", d->h_initial / 2);
        fputs("<h2>Row and column estimates against H_I and H_I/2</h2>", f);
        bars_chart(f, b, count, r->bits, marks, 2, fmin(d->h_r, d->h_c), C_BAR);
        fputs("<p class=\"note\">Bits per sample, the literal estimators on the matrix read "
              "by rows and by columns (no bitstring track, as in ea_restart); the amber bar "
              "is the lowest, min(H_r, H_c). The dashed lines are H_I, the initial estimate "
              "the restarts are checked against, and H_I/2: the validation (3.1.4.2) passes "
              "when the amber bar reaches H_I/2.</p>", f);
    }
    if (assess_restart_above_steady(d))
        fprintf(f, "<p class=\"note\">The restarts assess %.2f bits a sample above H_I. %s</p>",
                fmin(d->h_r, d->h_c) - d->h_initial, assess_restart_above_note);
    fputs("</section>\n", f);
}

static section_fn *const sections[] = {
    section_verdict, section_samples, section_estimators, section_iid, section_restart,
};

/* --- the file ----------------------------------------------------------------------------- */

static int report_file_failed(int rc, const char *why)
{
    fprintf(stderr, "randctl: assess: --report %s%s\n", why,
            rc == -EEXIST ? " (--force replaces a file of yours)" : "");
    return EXIT_FAILED;
}

int assess_report_open(struct randd_output *o, const char *out, bool force)
{
    char why[PATH_MAX + 256];
    mode_t umask_now = umask(0);        /* the mode fopen(out, "w") gave: 0666 less the umask */
    int rc;

    umask(umask_now);
    rc = randd_output_open(o, out, 0666 & ~umask_now,
                           force ? RANDD_OUTPUT_REPLACE : RANDD_OUTPUT_NEW, why, sizeof(why));

    return rc < 0 ? report_file_failed(rc, why) : EXIT_OK;
}

int assess_report_write(struct randd_output *o, const struct assess_report *r)
{
    FILE *f = randd_output_stream(o);
    char when[64] = "", why[PATH_MAX + 256];
    time_t now = time(NULL);
    struct tm tm;
    int rc;

    if (!f) {
        snprintf(why, sizeof(why), "%s: %s", o->path, strerror(errno));
        randd_output_abort(o);
        return report_file_failed(-EIO, why);
    }
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\"><title>SP 800-90B assessment: ", f);
    put_escaped(f, r->path);
    fprintf(f, "</title><style>%s</style></head><body><main><h1>SP 800-90B assessment%s</h1>"
               "<p class=\"sub\">", style, r->iid ? ": IID track" :
            r->restart ? ": restart tests" : "");
    put_escaped(f, r->path);
    fprintf(f, " &middot; %s samples of %u bit%s &middot; %s</p>\n", grouped("%zu", r->n), r->bits,
            r->bits == 1 ? "" : "s", when);
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        sections[i](f, r);
    fprintf(f, "<footer>randctl %s &middot; NIST SP 800-90B &middot; figures as NIST's "
               "ea_non_iid, ea_iid and ea_restart compute them</footer></main></body>"
               "</html>\n",
            RANDD_VERSION);
    rc = randd_output_commit(o, why, sizeof(why));
    return rc < 0 ? report_file_failed(rc, why) : EXIT_OK;
}
