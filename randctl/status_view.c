/* randctl status's view for people: one line for the daemon, a table of sources, then the
 * pool, the kernel feed and the clients, each a line of items that wraps rather than grows
 * past the width. A top-level STATUS field this view does not know yet gets a line of its
 * own (see unknown_sections), so a field the daemon adds is never hidden. Layout only: the
 * fetching, the refresh and the key: value form are status.c's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "status_view.h"

enum colour { PLAIN, GREEN, YELLOW, RED };
static const char *const sgr[] = { "", "\033[32m", "\033[33m", "\033[31m" };

#define LABEL 9          /* a line's label column ("kernel   ") */
#define GAP 2            /* blanks between table columns */

/* ---- reading the flattened STATUS -------------------------------------------------- */

static const char *field(const struct json_flat *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *field(const struct json_flat *j, const char *fmt, ...)
{
    char path[96];
    va_list ap;

    if (!j)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    return json_get(j, path);
}

static double number(const struct json_flat *j, const char *path)
{
    const char *s = field(j, "%s", path);

    return s ? atof(s) : 0;
}

static int truth(const struct json_flat *j, const char *path)
{
    const char *s = field(j, "%s", path);

    return s && !strcmp(s, "true");
}

static int present(const char *s)
{
    return s && *s && strcmp(s, "null") != 0;
}

/* Per second since the STATUS before, or -1 with none (or a counter that went back: the
 * daemon restarted). */
static double rate(const struct status_view *v, const struct json_flat *now, const char *path)
{
    double d;

    if (!v->prev || v->seconds <= 0 || !field(v->prev, "%s", path))
        return -1;
    d = number(now, path) - number(v->prev, path);
    return d < 0 ? -1 : d / v->seconds;
}

/* ---- numbers for people -------------------------------------------------------------- */

static const char *size(char *buf, size_t n, double b)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    int u = 0;

    for (; b >= 1024 && u < 5; u++)
        b /= 1024;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

/* Four characters at most before a suffix, for the table ("19.0K", "812"). */
static const char *compact(char *buf, size_t n, double b)
{
    static const char suffix[] = " KMGTP";
    int u = 0;

    for (; b >= 1000 && u < 5; u++)
        b /= 1024;
    snprintf(buf, n, u ? (b < 10 ? "%.1f%c" : "%.0f%c") : "%.0f", b, suffix[u]);
    return buf;
}

static const char *duration(char *buf, size_t n, double s)
{
    unsigned long t = s > 0 ? (unsigned long)s : 0;

    if (t < 60)
        snprintf(buf, n, "%lus", t);
    else if (t < 3600)
        snprintf(buf, n, "%lum%02lus", t / 60, t % 60);
    else if (t < 86400)
        snprintf(buf, n, "%luh%02lum", t / 3600, t / 60 % 60);
    else
        snprintf(buf, n, "%lud%02luh", t / 86400, t / 3600 % 24);
    return buf;
}

/* ---- writing within the width ------------------------------------------------------- */

struct writer {
    FILE *out;
    const struct status_view *v;
    int col, items;
};

/* What the daemon says goes to a terminal: a control character in it must not drive one. */
static void sanitise(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static void painted(struct writer *w, enum colour c, const char *text)
{
    if (w->v->colour && c != PLAIN)
        fprintf(w->out, "%s%s\033[0m", sgr[c], text);
    else
        fputs(text, w->out);
}

static void line_start(struct writer *w, const char *label)
{
    w->col = fprintf(w->out, "%-*s", LABEL, label);
    w->items = 0;
}

static void line_end(struct writer *w)
{
    fputc('\n', w->out);
}

/* One item of a line, after ", ": on a line of its own (indented past the label) when it
 * would not fit, cut with "..." when it fits on no line. */
static void item(struct writer *w, enum colour c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void item(struct writer *w, enum colour c, const char *fmt, ...)
{
    char text[512];
    int len, room;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    sanitise(text);
    len = (int)strlen(text);
    if (w->items && w->col + 2 + len > w->v->width) {
        w->col = fprintf(w->out, "\n%*s", LABEL, "") - 1;
    } else if (w->items) {
        fputs(", ", w->out);
        w->col += 2;
    }
    room = w->v->width - w->col;
    if (len > room && room > 3) {
        strcpy(text + room - 3, "...");
        len = room;
    }
    painted(w, c, text);
    w->col += len;
    w->items++;
}

/* text from column indent on, broken between words so that no line passes the width. */
static void wrapped(struct writer *w, int indent, enum colour c, const char *text)
{
    char buf[1280], *word, *save = NULL;     /* more than any reason shown, "earlier: " too */
    int col = indent, first = 1;

    snprintf(buf, sizeof(buf), "%s", text);
    sanitise(buf);
    fprintf(w->out, "%*s", indent, "");
    for (word = strtok_r(buf, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
        int len = (int)strlen(word);

        if (!first && col + 1 + len > w->v->width) {
            fprintf(w->out, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', w->out);
            col++;
        }
        if (len > w->v->width - col)       /* a word longer than a line: cut */
            word[len = w->v->width - col > 0 ? w->v->width - col : 0] = '\0';
        painted(w, c, word);
        col += len;
        first = 0;
    }
    fputc('\n', w->out);
}

/* ---- the daemon ------------------------------------------------------------------------ */

static void daemon_line(struct writer *w, const struct json_flat *j)
{
    const char *why = field(j, "not_ready_reason");
    char buf[32];
    int workers = 0;

    while (field(j, "workers[%d].connected", workers))
        workers++;
    line_start(w, "randd");
    item(w, PLAIN, "%s", field(j, "version") ? field(j, "version") : "?");
    item(w, PLAIN, "up %s", duration(buf, sizeof(buf), number(j, "uptime_seconds")));
    if (truth(j, "ready"))
        item(w, GREEN, "ready");
    else if (present(why))
        item(w, RED, "not ready: %s", why);
    else
        item(w, RED, "not ready");
    const char *engine = field(j, "pool.engine") ? field(j, "pool.engine") : "?";

    /* The keystream of the daemon's Cymric generators; a daemon before it said none. Under
     * Randen, Cymric still makes the prediction-resistant replies and the primes: named
     * apart, so the line does not read as Randen running that keystream. A DRBG engine makes
     * those itself (pr_generator.c, primes.c): no Cymric serves. */
    int drbg = present(field(j, "pool.drbg.mechanism"));

    if (field(j, "mode") && !strcmp(field(j, "mode"), "approved"))
        item(w, GREEN, "approved mode");
    if (field(j, "pool.cipher") && !strcmp(engine, "cymric"))
        item(w, PLAIN, "engine %s (%s)", engine, field(j, "pool.cipher"));
    else if (drbg)                  /* its primes and prediction-resistant replies too */
        item(w, PLAIN, "engine %s", engine);
    else if (field(j, "pool.cipher"))
        item(w, PLAIN, "engine %s (Cymric: %s)", engine, field(j, "pool.cipher"));
    else
        item(w, PLAIN, "engine %s", engine);
    item(w, PLAIN, "%d worker%s", workers, workers == 1 ? "" : "s");
    line_end(w);
}

/* ---- the sources' table --------------------------------------------------------------- */

enum { C_NAME, C_STATE, C_CREDIT, C_ASSESSED, C_READ, C_USED, C_FAIL, NCOLS };

struct column {
    const char *head;
    int width, left, shown;
};

/* The columns that fit: the byte counts and the assessment go first on a narrow terminal;
 * name, state and failures always stay. Returns the table's width. */
static int fit_columns(struct column *c, int width)
{
    static const int drop[] = { C_USED, C_ASSESSED, C_READ, C_CREDIT };
    int total = 0;

    for (int i = 0; i < NCOLS; i++)
        total += c[i].width + (i ? GAP : 0);
    for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]) && total > width; d++) {
        c[drop[d]].shown = 0;
        total -= c[drop[d]].width + GAP;
    }
    return total;
}

static void cell(struct writer *w, const struct column *c, int i, enum colour colour,
                 const char *text)
{
    char buf[64];

    if (!c[i].shown)
        return;
    if (i)
        fprintf(w->out, "%*s", GAP, "");
    snprintf(buf, sizeof(buf), "%.*s", c[i].width, text);
    sanitise(buf);
    if (c[i].left) {
        painted(w, colour, buf);
        fprintf(w->out, "%*s", c[i].width - (int)strlen(buf), "");
    } else {
        fprintf(w->out, "%*s", c[i].width - (int)strlen(buf), "");
        painted(w, colour, buf);
    }
}

static enum colour state_colour(const char *state)
{
    return !state ? PLAIN : !strcmp(state, "healthy") ? GREEN
         : !strcmp(state, "quarantined") ? RED : YELLOW;
}

/* Columns: the state, the credit and the assessed min-entropy in bits per byte, the raw
 * bytes read (per second under --watch) and used, the health-test failures, and the reason
 * of the last quarantine: beside the row when it fits, else under it, wrapped. */
static void sources_table(struct writer *w, const struct json_flat *j)
{
    struct column c[NCOLS] = {
        [C_NAME] = { "SOURCE", 6, 1, 1 },      [C_STATE] = { "STATE", 11, 1, 1 },
        [C_CREDIT] = { "CREDIT", 6, 0, 1 },    [C_ASSESSED] = { "ASSESSED", 8, 0, 1 },
        [C_READ] = { w->v->prev ? "READ/s" : "READ", 7, 0, 1 },
        [C_USED] = { "USED", 7, 0, 1 },        [C_FAIL] = { "FAIL", 5, 0, 1 },
    };
    int n = 0, table;

    for (const char *name; (name = field(j, "sources[%d].name", n)); n++)
        if ((int)strlen(name) > c[C_NAME].width)
            c[C_NAME].width = strlen(name) < 16 ? (int)strlen(name) : 16;
    if (!n) {
        fputs("sources  none\n", w->out);
        return;
    }
    table = fit_columns(c, w->v->width);
    for (int i = 0; i < NCOLS; i++)
        cell(w, c, i, PLAIN, c[i].head);
    fprintf(w->out, "%s\n", table + GAP + 6 <= w->v->width ? "  REASON" : "");
    for (int s = 0; s < n; s++) {
        const char *state = field(j, "sources[%d].state", s);
        const char *reason = field(j, "sources[%d].reason", s);
        const char *assessed = field(j, "sources[%d].assessed_entropy_per_byte", s);
        char path[96], buf[32], shown[1200];
        double read;

        cell(w, c, C_NAME, PLAIN, field(j, "sources[%d].name", s));
        cell(w, c, C_STATE, state_colour(state), state ? state : "?");
        snprintf(buf, sizeof(buf), "%.3g",
                 atof(field(j, "sources[%d].entropy_per_byte", s) ?: "0"));
        cell(w, c, C_CREDIT, PLAIN, buf);
        snprintf(buf, sizeof(buf), present(assessed) ? "%.2f" : "-",
                 present(assessed) ? atof(assessed) : 0);
        cell(w, c, C_ASSESSED, PLAIN, buf);
        snprintf(path, sizeof(path), "sources[%d].bytes_read", s);
        read = w->v->prev ? rate(w->v, j, path) : number(j, path);
        cell(w, c, C_READ, PLAIN, read < 0 ? "-" : compact(buf, sizeof(buf), read));
        snprintf(path, sizeof(path), "sources[%d].bytes_used", s);
        cell(w, c, C_USED, PLAIN, compact(buf, sizeof(buf), number(j, path)));
        snprintf(path, sizeof(path), "sources[%d].health_failures", s);
        snprintf(buf, sizeof(buf), "%.0f", number(j, path));
        cell(w, c, C_FAIL, number(j, path) > 0 ? YELLOW : PLAIN, buf);
        /* A source back in use keeps its last quarantine's reason: said as past, not as now. */
        if (present(reason) && state && strcmp(state, "quarantined")) {
            snprintf(shown, sizeof(shown), "earlier: %s", reason);
            reason = shown;
        }
        if (!present(reason)) {
            fputc('\n', w->out);
        } else if (table + GAP + (int)strlen(reason) <= w->v->width) {
            fprintf(w->out, "%*s", GAP, "");
            w->col = table + GAP;
            painted(w, PLAIN, reason);          /* fits: no control bytes pass sanitise */
            fputc('\n', w->out);
        } else {
            fputc('\n', w->out);
            wrapped(w, c[C_NAME].width + GAP, state_colour(state), reason);
        }
    }
}

/* The CPU's noise source when it is not among the sources (no RNDRRS on this arm64, DARN
 * before POWER9, or cpu_source = no): its name and why, so an absent row is explained. */
static void cpu_source_line(struct writer *w, const struct json_flat *j)
{
    const char *name = field(j, "cpu_source.name"), *reason = field(j, "cpu_source.reason");

    if (!name || truth(j, "cpu_source.in_use"))
        return;
    line_start(w, "cpu");
    item(w, YELLOW, "%s not in use", name);
    if (present(reason))
        item(w, PLAIN, "%s", reason);
    line_end(w);
}

/* getrandom the only credited source (STATUS kernel_only): said under the table, since each
 * row alone may look fine. Why each noise source is not credited is in the rows above (and the
 * cpu line), so kernel_only_reason is not repeated: the view stays within its 24 lines. */
static void kernel_only_line(struct writer *w, const struct json_flat *j)
{
    if (!truth(j, "kernel_only"))
        return;
    line_start(w, "trust");
    item(w, YELLOW, "only the kernel's word: getrandom alone is credited");
    item(w, PLAIN, "output is exactly as unpredictable as the kernel's");
    line_end(w);
}

/* ---- the pool, the kernel feed, the clients ------------------------------------------ */

static void pool_line(struct writer *w, const struct json_flat *j)
{
    char buf[32];

    line_start(w, "pool");
    if (truth(j, "pool.seeded"))
        item(w, PLAIN, "seeded");
    else
        item(w, RED, "not seeded");
    item(w, PLAIN, "%.0f reseeds", number(j, "pool.reseeds"));
    item(w, PLAIN, "last %s ago",
         duration(buf, sizeof(buf), number(j, "pool.last_reseed_age_seconds")));
    item(w, PLAIN, "%s out since",
         size(buf, sizeof(buf), number(j, "pool.bytes_since_reseed")));
    item(w, PLAIN, "%s credited", size(buf, sizeof(buf), number(j, "pool.credited_bits") / 8));
    if (truth(j, "pool.locked_in_memory"))
        item(w, PLAIN, "locked in memory");
    else
        item(w, YELLOW, "not locked in memory");
    if (number(j, "pool.vm_generations") > 0 && !field(j, "vmgenid.kernel_log"))
        item(w, YELLOW, "%.0f VM generation changes", number(j, "pool.vm_generations"));
    line_end(w);
}

static void kernel_line(struct writer *w, const struct json_flat *j)
{
    const char *why = field(j, "kernel.off_reason"), *error = field(j, "kernel.last_error");
    char buf[32];

    line_start(w, "kernel");
    if (truth(j, "kernel.enabled"))
        item(w, GREEN, "feed on");
    else
        item(w, truth(j, "config.kernel_topup") ? YELLOW : PLAIN, "feed off: %s",
             present(why) ? why : "?");
    if (truth(j, "kernel.initialised"))
        item(w, PLAIN, "initialised");
    else
        item(w, RED, "not initialised");
    item(w, PLAIN, "%.0f top-ups", number(j, "kernel.topups"));
    item(w, PLAIN, "%.0f reseeds", number(j, "kernel.reseeds"));
    item(w, PLAIN, "%s credited", size(buf, sizeof(buf), number(j, "kernel.bits_offered") / 8));
    if (present(error))
        item(w, RED, "last error: %s", error);
    line_end(w);
}

static void clients_line(struct writer *w, const struct json_flat *j)
{
    const char *per_uid = field(j, "clients.per_uid");
    double busy = number(j, "clients.busy"), over = number(j, "clients.over_uid_share");

    line_start(w, "clients");
    item(w, PLAIN, "%.0f connected", number(j, "clients.connected"));
    item(w, PLAIN, "max %s, %s per uid", field(j, "config.max_clients") ?: "?",
         per_uid ? per_uid : "?");
    item(w, PLAIN, "%.0f accepted", number(j, "clients.accepted"));
    item(w, busy > 0 ? YELLOW : PLAIN, "%.0f busy", busy);
    item(w, over > 0 ? YELLOW : PLAIN, "%.0f over a uid's share", over);
    line_end(w);
}

/* Bytes served and requests: totals, and under --watch the rates since the last refresh. */
static void served_line(struct writer *w, const struct json_flat *j)
{
    double requests = 0, errors = 0, r;
    char buf[32];

    for (size_t i = 0; i < j->count; i++) {
        const char *path = j->pairs[i].path;

        if (!strncmp(path, "requests.", 9))
            requests += atof(j->pairs[i].value);
        else if (!strncmp(path, "replies.", 8) && strcmp(path, "replies.OK"))
            errors += atof(j->pairs[i].value);
    }
    line_start(w, "served");
    item(w, PLAIN, "%s", size(buf, sizeof(buf), number(j, "bytes_served")));
    if ((r = rate(w->v, j, "bytes_served")) >= 0)
        item(w, PLAIN, "%s/s", size(buf, sizeof(buf), r));
    item(w, PLAIN, "%.0f requests", requests);
    if (w->v->prev && w->v->seconds > 0) {
        double before = 0;

        for (size_t i = 0; i < w->v->prev->count; i++)
            if (!strncmp(w->v->prev->pairs[i].path, "requests.", 9))
                before += atof(w->v->prev->pairs[i].value);
        /* Less this view's own STATUS, one a refresh: an idle daemon reads 0.0, not 1/s. */
        if (requests >= before + 1)
            item(w, PLAIN, "%.1f requests/s", (requests - before - 1) / w->v->seconds);
    }
    for (size_t i = 0; i < j->count; i++) {
        if (strncmp(j->pairs[i].path, "replies.", 8) || !strcmp(j->pairs[i].path, "replies.OK")
            || atof(j->pairs[i].value) == 0)
            continue;
        item(w, YELLOW, "%s %s", j->pairs[i].path + 8, j->pairs[i].value);
    }
    if (errors == 0)
        item(w, PLAIN, "no errors");
    line_end(w);
}

/* The noise reservoir that serves the prediction-resistant (PR) and full-entropy (FE) modes:
 * the bits ready, the requests waiting, then for each mode its requests, the bytes served and
 * the noise bits they spent; refusals only when there were some. A daemon without the
 * reservoir (older than the modes) has no line. */
static void noise_line(struct writer *w, const struct json_flat *j)
{
    static const struct { const char *key, *name; } modes[] = {
        { "prediction_resistant", "PR" }, { "full_entropy", "FE" },
    };
    static const struct { const char *key, *name; } refusals[] = {
        { "refused_not_ready", "not ready" }, { "refused_busy", "busy" },
        { "refused_no_noise_source", "no noise source" }, { "cancelled", "given up" },
    };
    double waiting = number(j, "noise.waiting");
    char path[96], buf[32];

    if (!field(j, "noise.available_bits"))
        return;
    line_start(w, "noise");
    item(w, PLAIN, "%.0f bits ready", number(j, "noise.available_bits"));
    item(w, waiting > 0 ? YELLOW : PLAIN, "%.0f waiting", waiting);
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        double answered, spent;

        /* One field at a time: path rewritten among one call's arguments gave both numbers
         * whichever field the compiler wrote there first (gcc: consumed_bits). */
        snprintf(path, sizeof(path), "noise.%s.served_bytes", modes[m].key);
        size(buf, sizeof(buf), number(j, path));
        snprintf(path, sizeof(path), "noise.%s.answered", modes[m].key);
        answered = number(j, path);
        snprintf(path, sizeof(path), "noise.%s.consumed_bits", modes[m].key);
        spent = number(j, path);
        item(w, PLAIN, "%s %.0f (%s, %.0f bits)", modes[m].name, answered, buf, spent);
    }
    for (size_t r = 0; r < sizeof(refusals) / sizeof(refusals[0]); r++) {
        snprintf(path, sizeof(path), "noise.%s", refusals[r].key);
        if (number(j, path) > 0)
            item(w, YELLOW, "%.0f %s", number(j, path), refusals[r].name);
    }
    line_end(w);
}

/* What tells randd of a restored or cloned VM: the announcements it watches (none watched
 * warns: a clone is then noticed only if the clock jumps), the generation changes it saw and
 * what announced them, and kernel log records overwritten before it read them (one could have
 * been the announcement). A daemon without the vmgenid object keeps the count on the pool
 * line. */
static void vmgenid_line(struct writer *w, const struct json_flat *j)
{
    int log = truth(j, "vmgenid.kernel_log"), uevent = truth(j, "vmgenid.uevent");
    double changes = number(j, "pool.vm_generations");
    double lost = number(j, "vmgenid.kernel_log_lost");

    if (!field(j, "vmgenid.kernel_log"))
        return;
    line_start(w, "vmgenid");
    if (log || uevent)
        item(w, PLAIN, "watching %s", log && uevent ? "kernel log and uevent"
                                      : log ? "kernel log" : "uevent");
    else
        item(w, YELLOW, "watching nothing: a clone is noticed only if the clock jumps");
    item(w, changes > 0 ? YELLOW : PLAIN, "%.0f generation change%s", changes,
         changes == 1 ? "" : "s");
    if (changes > 0)
        item(w, PLAIN, "from %.0f log lines and %.0f uevents",
             number(j, "vmgenid.kernel_log_lines"), number(j, "vmgenid.uevents"));
    if (lost > 0) {
        double rekeys = number(j, "pool.vm_rekeys");

        item(w, YELLOW, "kernel log records lost %.0f times", lost);
        if (rekeys > 0)     /* a fork possible, not confirmed: output went on, rekeyed */
            item(w, PLAIN, "the generator rekeyed at once %.0f time%s", rekeys,
                 rekeys == 1 ? "" : "s");
    }
    line_end(w);
}

static void egd_line(struct writer *w, const struct json_flat *j)
{
    char buf[32];

    if (!present(field(j, "config.egd_socket")) && !present(field(j, "config.egd_listen"))
        && number(j, "egd.clients_accepted") == 0)
        return;
    line_start(w, "egd");
    item(w, PLAIN, "%.0f accepted", number(j, "egd.clients_accepted"));
    item(w, PLAIN, "%s served", size(buf, sizeof(buf), number(j, "egd.bytes_served")));
    item(w, PLAIN, "%s added", size(buf, sizeof(buf), number(j, "egd.entropy_bytes_added")));
    item(w, PLAIN, "%.0f unknown commands", number(j, "egd.unknown_commands"));
    line_end(w);
}

/* Keys the file now sets another way than randd runs with, which only a restart applies:
 * each with the value waiting, then what that means. */
static void pending_line(struct writer *w, const struct json_flat *j)
{
    w->items = 0;
    for (size_t i = 0; i < j->count; i++) {
        if (strncmp(j->pairs[i].path, "pending_restart.", 16))
            continue;
        if (!w->items)
            line_start(w, "restart");
        item(w, YELLOW, "%s = %s", j->pairs[i].path + 16, j->pairs[i].value);
    }
    if (w->items) {
        item(w, PLAIN, "in the file, not in effect: a restart of randd applies %s",
             w->items > 1 ? "them" : "it");
        line_end(w);
    }
}

/* "40 s ago", "4 min ago", "3.5 h ago", "2 days ago", from a Unix time. */
static const char *ago(char *buf, size_t len, double then)
{
    double s = difftime(time(NULL), (time_t)then);

    if (s < 0)
        s = 0;
    if (s < 90)
        snprintf(buf, len, "%.0f s ago", s);
    else if (s < 5400)
        snprintf(buf, len, "%.0f min ago", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%.1f h ago", s / 3600);
    else
        snprintf(buf, len, "%.0f days ago", s / 86400);
    return buf;
}

/* "every 10 min", "every 45 s", "every 2 h"; 0: "on request only". */
static const char *every(char *buf, size_t len, double seconds)
{
    if (seconds <= 0)
        snprintf(buf, len, "on request only (selftest_interval = 0)");
    else if (seconds < 120)
        snprintf(buf, len, "every %.0f s", seconds);
    else if (seconds < 7200)
        snprintf(buf, len, "every %.0f min", seconds / 60);
    else
        snprintf(buf, len, "every %.1f h", seconds / 3600);
    return buf;
}

/* The known-answer self-tests: the last run's verdict, when and why it ran, how often they
 * run, and the counts. A failure stops all output: said in red, with the test that failed. */
static void selftest_line(struct writer *w, const struct json_flat *j)
{
    const char *result = field(j, "selftest.last_result");
    const char *trigger = field(j, "selftest.last_trigger");
    char when[32], often[64];

    if (!field(j, "selftest.runs"))
        return;
    line_start(w, "selftest");
    if (!present(result))
        item(w, YELLOW, "not run yet");
    else if (!strcmp(result, "pass"))
        item(w, GREEN, "passed %s (%s)", ago(when, sizeof(when),
             number(j, "selftest.last_time")), present(trigger) ? trigger : "?");
    else
        item(w, RED, "FAILED %s (%s): %s; all output stopped until a self-test passes",
             ago(when, sizeof(when), number(j, "selftest.last_time")),
             present(trigger) ? trigger : "?",
             present(field(j, "selftest.failed_test")) ? field(j, "selftest.failed_test") : "?");
    item(w, PLAIN, "%s", every(often, sizeof(often), number(j, "selftest.interval_seconds")));
    item(w, PLAIN, "%.0f run%s, %.0f failed", number(j, "selftest.runs"),
         number(j, "selftest.runs") == 1 ? "" : "s", number(j, "selftest.failures"));
    line_end(w);
}

/* The health tests' fixed settings: the false-alarm rate each test is cut for, and the size
 * of a source's start-up test. */
static void health_line(struct writer *w, const struct json_flat *j)
{
    if (!field(j, "health.alpha_log2"))
        return;
    line_start(w, "health");
    item(w, PLAIN, "false-alarm rate 2^-%.0f a test (SP 800-90B alpha)",
         -number(j, "health.alpha_log2"));
    item(w, PLAIN, "start-up test of %.0f samples a source",
         number(j, "health.startup_samples"));
    line_end(w);
}

/* The top-level fields the lines above show. Another (a field a newer daemon adds) gets a
 * line of "key value" items under its own name, until this view learns to lay it out. */
static const char *const known[] = {
    "version", "uptime_seconds", "ready", "not_ready_reason", "sources", "pool", "kernel",
    "clients", "requests", "replies", "bytes_served", "workers", "egd", "config",
    "pending_restart", "noise", "vmgenid", "cpu_source", "selftest", "health", "kernel_only",
    "kernel_only_reason",
};

static size_t top_length(const char *path)
{
    return strcspn(path, ".[");
}

static int is_known(const char *path)
{
    size_t n = top_length(path);

    for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
        if (strlen(known[k]) == n && !strncmp(known[k], path, n))
            return 1;
    return 0;
}

static void unknown_sections(struct writer *w, const struct json_flat *j)
{
    for (size_t i = 0; i < j->count; i++) {
        const char *path = j->pairs[i].path;
        size_t n = top_length(path), seen = 0;
        char label[LABEL];

        if (is_known(path))
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = top_length(j->pairs[k].path) == n && !strncmp(j->pairs[k].path, path, n);
        if (seen)
            continue;
        snprintf(label, sizeof(label), "%.*s", (int)n, path);
        line_start(w, label);
        for (size_t k = i; k < j->count; k++) {
            const char *p = j->pairs[k].path;

            if (top_length(p) != n || strncmp(p, path, n))
                continue;
            p += n + (p[n] == '.');
            item(w, PLAIN, "%s%s%s", p, *p ? " " : "", j->pairs[k].value);
        }
        line_end(w);
    }
}

void status_view_print(FILE *out, const struct json_flat *j, const struct status_view *v)
{
    struct writer w = { .out = out, .v = v };

    daemon_line(&w, j);
    fputc('\n', out);
    sources_table(&w, j);
    cpu_source_line(&w, j);
    kernel_only_line(&w, j);
    fputc('\n', out);
    pool_line(&w, j);
    kernel_line(&w, j);
    clients_line(&w, j);
    served_line(&w, j);
    noise_line(&w, j);
    vmgenid_line(&w, j);
    selftest_line(&w, j);
    health_line(&w, j);
    egd_line(&w, j);
    pending_line(&w, j);
    unknown_sections(&w, j);
    if (v->generation) {
        line_start(&w, "librandd");
        item(&w, PLAIN, "%s", v->generation);
        line_end(&w);
    }
}
