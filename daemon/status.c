/* STATUS as JSON, written with stdio into a memory stream, and as log lines for SIGUSR1.
 * Strings that come from outside (paths, reasons) are escaped in the JSON; everything else
 * is numbers and fixed words. */
#include "status.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "egd.h"
#include "health.h"
#include "log.h"
#include "selfcheck.h"
#include "vmgenid.h"
#include "server.h"

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The credit in use beside the lowest figure assessments measured (null: not assessed yet),
 * and why the credit stays above it (null: it does not). */
static void write_assessment(FILE *f, const struct source *s)
{
    fputs(",\"assessed_entropy_per_byte\":", f);
    if (s->assessed_entropy_per_byte == SOURCE_NOT_ASSESSED)
        fputs("null", f);
    else
        fprintf(f, "%.4g", s->assessed_entropy_per_byte);
    fprintf(f, ",\"assessments\":%llu,\"assessment_warning\":",
            (unsigned long long)s->assessments);
    if (s->assessment_warning[0])
        json_string(f, s->assessment_warning);
    else
        fputs("null", f);
}

/* What the cutoffs follow (min-entropy a sample), the tests the source runs (what randctl
 * inject-failure may name), the one that failed last, and the failures induced. */
static void write_health_tests(FILE *f, const struct source *s)
{
    const struct health *h = &s->health;
    bool first = true;

    fprintf(f, ",\"health_entropy_per_sample\":%.4g,\"lag_cutoff\":", h->entropy);
    if (h->lag_test)
        fprintf(f, "%u", h->lag_cutoff);
    else
        fputs("null", f);
    fputs(",\"health_tests\":[", f);
    for (int t = 0; t < RANDD_HEALTH_TEST_COUNT; t++)
        if (health_runs(h, t)) {
            fprintf(f, "%s\"%s\"", first ? "" : ",", randd_health_test_name(t));
            first = false;
        }
    fputs("],\"failed_test\":", f);
    if (h->failed_test >= 0)
        fprintf(f, "\"%s\"", randd_health_test_name(h->failed_test));
    else
        fputs("null", f);
    fprintf(f, ",\"injected_failures\":%llu", (unsigned long long)s->injected_failures);
}

static void write_sources(FILE *f, const struct pool *p)
{
    fputs("\"sources\":[", f);
    for (size_t i = 0; i < p->nsources; i++) {
        const struct source *s = p->sources[i];

        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_string(f, s->name);
        fprintf(f, ",\"state\":\"%s\",\"bytes_read\":%llu,\"bytes_used\":%llu,"
                   "\"empty_reads\":%llu,\"read_errors\":%llu,\"stale_discarded\":%llu,"
                   "\"health_failures\":%llu,"
                   "\"entropy_per_byte\":%.4g,\"kernel_creditable\":%s,"
                   "\"rct_cutoff\":%u,\"apt_cutoff\":%u,\"apt_window\":%u,\"reason\":",
                randd_source_state_name(s->health.state), (unsigned long long)s->bytes_read,
                (unsigned long long)s->bytes_used, (unsigned long long)s->empty_reads,
                (unsigned long long)s->read_errors, (unsigned long long)s->stale_discarded,
                (unsigned long long)s->health.failures,
                s->entropy_per_byte, s->kernel_creditable ? "true" : "false",
                s->health.rct_cutoff, s->health.apt_cutoff, s->health.apt_window);
        json_string(f, s->health.reason);
        write_assessment(f, s);
        fprintf(f, ",\"credited_bits\":%.0f,\"noise_bits\":%.0f,\"noise_source\":%s,"
                   "\"cpu_seconds\":%.6f,\"stuck_discarded\":%llu,\"running\":%s",
                s->credited_bits, p->noise_bits[i], s->noise ? "true" : "false", s->cpu_seconds,
                (unsigned long long)s->stuck_discarded, s->wanted ? "true" : "false");
        write_health_tests(f, s);
        fputc('}', f);
    }
    fputs("],", f);
}

/* Whether getrandom is the only credited source, and if so why no noise source is: then
 * every ordinary byte is exactly as unpredictable as the kernel's generator, no more. */
static void write_kernel_only(FILE *f, const struct pool *p)
{
    char why[POOL_NOISE_WHY_BYTES];
    bool kernel_only = pool_kernel_only(p, why, sizeof(why));

    fprintf(f, "\"kernel_only\":%s,\"kernel_only_reason\":", kernel_only ? "true" : "false");
    if (kernel_only)
        json_string(f, why);
    else
        fputs("null", f);
    fputc(',', f);
}

/* Whether the CPU's noise source is in use, and if not why: on a CPU without one (arm64
 * before FEAT_RNG, POWER8) the sources list alone would not say it was looked for. */
static void write_cpu_source(FILE *f, const struct status_view *v)
{
    const char *absent = v->cpu_source_absent ? v->cpu_source_absent : "";

    fputs("\"cpu_source\":{\"name\":", f);
    json_string(f, v->cpu_source_name ? v->cpu_source_name : "cpu");
    fprintf(f, ",\"in_use\":%s,\"reason\":", *absent ? "false" : "true");
    if (*absent)
        json_string(f, absent);
    else
        fputs("null", f);
    fputs("},", f);
}

/* SP 800-90B 3.1.5 for the last seed (pool.h): the pool's function, and null figures before
 * the first seed; h_prime is null for a vetted function, which 3.1.5.1.2 credits without it.
 * Closes the pool's object. */
static void write_conditioning(FILE *f, const struct pool *p)
{
    const struct pool_conditioning *c = &p->last_seed;
    bool vetted = pool_conditioning_vetted(p);

    fprintf(f, "\"conditioning\":{\"function\":\"%s\",\"vetted\":%s,\"n_out\":%d,\"nw\":%d,",
            pool_conditioning_name(p), vetted ? "true" : "false", POOL_CONDITIONED_BITS,
            POOL_CONDITIONING_NW);
    if (vetted)
        fputs("\"h_prime\":null,", f);
    else
        fprintf(f, "\"h_prime\":%.4g,", POOL_CONDITIONING_H_PRIME);
    if (c->n_in)
        fprintf(f, "\"n_in\":%llu,\"h_in\":%.1f,\"h_out\":%.1f}},",
                (unsigned long long)c->n_in, c->h_in, c->h_out);
    else
        fputs("\"n_in\":null,\"h_in\":null,\"h_out\":null}},", f);
}

static void write_pool_and_kernel(FILE *f, const struct pool *p, const struct kernel *k,
                                  uint64_t now_ns)
{
    fprintf(f, "\"pool\":{\"engine\":\"%s\",\"cipher\":\"%s\",\"seeded\":%s,"
               "\"reseeds\":%llu,\"last_reseed_age_seconds\":%.1f,"
               "\"credited_bits\":%.0f,\"bytes_since_reseed\":%llu,\"locked_in_memory\":%s,"
               "\"vm_generations\":%llu,\"vm_rekeys\":%llu,",
            pool_engine_name(p), pool_cipher_name(p), p->seeded ? "true" : "false",
            (unsigned long long)p->reseeds,
            p->seeded ? (double)(now_ns - p->last_reseed_ns) / 1e9 : 0.0, p->credit,
            (unsigned long long)p->bytes_since_reseed, p->lock_errno ? "false" : "true",
            (unsigned long long)p->vm_generations, (unsigned long long)p->vm_rekeys);
    if (pool_engine_mechanism(p))
        fprintf(f, "\"drbg\":{\"mechanism\":\"%s\",\"requests_since_seed\":%llu,"
                   "\"instantiate_bits\":%u},", pool_engine_mechanism(p),
                (unsigned long long)pool_engine_requests(p),
                p->instantiate_at_three_halves ? POOL_INSTANTIATE_BITS : POOL_SEED_BITS);
    else
        fputs("\"drbg\":null,", f);
    write_conditioning(f, p);
    fprintf(f, "\"kernel\":{\"enabled\":%s,\"initialised\":%s,\"topups\":%llu,\"reseeds\":%llu,"
               "\"bits_offered\":%llu,",
            k->enabled ? "true" : "false", k->initialised ? "true" : "false",
            (unsigned long long)k->topups, (unsigned long long)k->reseeds,
            (unsigned long long)k->bits_offered);
    if (k->init_seen)
        fprintf(f, "\"initialised_after_seconds\":%.3f,", (double)k->init_after_ns / 1e9);
    fputs("\"off_reason\":", f);
    json_string(f, k->off_reason);
    fputs(",\"last_error\":", f);
    json_string(f, k->last_error);
    fputs("},", f);
}

/* Every serving loop's counts, summed: what STATUS reports for the daemon as a whole. */
struct server_totals {
    uint64_t accepted, busy, requests[RANDD_OP_LAST + 1], replies[RANDD_STATUS_COUNT], bytes;
    uint64_t modes[RANDD_MODE_REQUEST_COUNT];     /* server_stats.mode_requests */
};

static void sum_loops(const struct status_view *v, struct server_totals *t)
{
    *t = (struct server_totals){ 0 };
    for (size_t i = 0; i < v->nloops; i++) {
        const struct server_stats *st = v->loops[i];

        t->accepted += st->clients_accepted;
        t->busy += st->clients_busy;
        t->bytes += st->bytes_served;
        for (int op = 0; op <= RANDD_OP_LAST; op++)
            t->requests[op] += st->requests[op];
        for (int s = 0; s < RANDD_STATUS_COUNT; s++)
            t->replies[s] += st->replies[s];
        for (int m = 0; m < RANDD_MODE_REQUEST_COUNT; m++)
            t->modes[m] += st->mode_requests[m];
    }
}

/* Each loop's share, so an operator sees whether accepts spread across them. */
static void write_loops(FILE *f, const struct status_view *v)
{
    fputs("\"workers\":[", f);
    for (size_t i = 0; i < v->nloops; i++) {
        const struct server_stats *st = v->loops[i];
        uint64_t requests = 0;

        for (int op = 0; op <= RANDD_OP_LAST; op++)
            requests += st->requests[op];
        for (int m = 0; m < RANDD_MODE_REQUEST_COUNT; m++)
            requests += st->mode_requests[m];
        fprintf(f, "%s{\"connected\":%llu,\"accepted\":%llu,\"requests\":%llu,"
                   "\"bytes_served\":%llu}", i ? "," : "",
                (unsigned long long)st->connected, (unsigned long long)st->clients_accepted,
                (unsigned long long)requests, (unsigned long long)st->bytes_served);
    }
    fputs("],", f);
}

/* Requests and replies keyed by protocol.h's names, the ones randctl metrics reads back. */
static void write_server(FILE *f, const struct status_view *v)
{
    struct server_totals t;

    sum_loops(v, &t);
    /* busy: protocol v1 clients turned away, for any reason; over_uid_share: any
     * listener's, turned away because their uid held its fair share of a full table;
     * per_uid: that share now; evicted: idle connections closed to make room for a uid. */
    fprintf(f, "\"clients\":{\"connected\":%u,\"accepted\":%llu,\"busy\":%llu,"
               "\"over_uid_share\":%llu,\"per_uid\":%u,\"evicted\":%llu},\"requests\":{",
            v->clients ? (unsigned)v->clients->connected : 0, (unsigned long long)t.accepted,
            (unsigned long long)t.busy,
            v->clients ? (unsigned long long)v->clients->over_uid_share : 0ull,
            v->clients ? listener_fair_share(v->clients, v->config)
                       : config_clients_per_uid(v->config),
            v->clients ? (unsigned long long)v->clients->evicted : 0ull);
    for (int op = 0; op <= RANDD_OP_LAST; op++)
        fprintf(f, "%s\"%s\":%llu", op ? "," : "", randd_op_name(op),
                (unsigned long long)t.requests[op]);
    /* BYTES and SEED with a mode, apart from the others (lib/PROTOCOL.md) */
    for (int m = 0; m < RANDD_MODE_REQUEST_COUNT; m++)
        fprintf(f, ",\"%s\":%llu", randd_mode_request_name(m), (unsigned long long)t.modes[m]);
    fputs("},\"replies\":{", f);
    for (int i = 0; i < RANDD_STATUS_COUNT; i++)
        fprintf(f, "%s\"%s\":%llu", i ? "," : "", randd_status_name(i),
                (unsigned long long)t.replies[i]);
    fprintf(f, "},\"bytes_served\":%llu,", (unsigned long long)t.bytes);
    write_loops(f, v);
}

/* The noise reservoir (noise.h): what is ready, what each mode spent and served, who waits. */
static void write_noise(FILE *f, const struct noise *n)
{
    static const char *const modes[NOISE_MODES] = {
        [NOISE_PREDICTION_RESISTANT] = "prediction_resistant",
        [NOISE_FULL_ENTROPY] = "full_entropy",
    };
    const struct noise_stats *st = &n->stats;

    fprintf(f, "\"noise\":{\"available_bits\":%.0f,\"blocks_ready\":%u,\"block_bits\":%d,"
               "\"margin_bits\":%d,\"waiting\":%u,\"blocks_made\":%llu",
            noise_available_bits(n), n->free_blocks, NOISE_BLOCK_BITS, NOISE_MARGIN_BITS,
            n->nwaiting, (unsigned long long)st->blocks_made);
    for (int m = 0; m < NOISE_MODES; m++)
        fprintf(f, ",\"%s\":{\"consumed_bits\":%llu,\"served_bytes\":%llu,\"answered\":%llu}",
                modes[m], (unsigned long long)st->consumed_bits[m],
                (unsigned long long)st->served_bytes[m], (unsigned long long)st->requests[m]);
    /* Keys no other object of STATUS has: readers look them up by name alone. */
    fprintf(f, ",\"noise_reseeds\":%llu,\"refused_not_ready\":%llu,\"refused_busy\":%llu,"
               "\"refused_no_noise_source\":%llu,"
               "\"cancelled\":%llu,\"dropped_bits\":%llu,\"wait_ratio_max\":%.3f},",
            (unsigned long long)st->reseeds, (unsigned long long)st->not_ready,
            (unsigned long long)st->busy, (unsigned long long)st->no_source,
            (unsigned long long)st->cancelled, (unsigned long long)st->dropped_bits,
            st->wait_ratio_max);
}

/* Which VM generation announcements randd watches, and what each has brought. */
static void write_vmgenid(FILE *f, const struct vmgenid *v)
{
    fprintf(f, "\"vmgenid\":{\"kernel_log\":%s,\"uevent\":%s,\"kernel_log_lines\":%llu,"
               "\"kernel_log_lost\":%llu,\"uevents\":%llu},",
            v->kmsg_fd >= 0 ? "true" : "false", v->fd >= 0 ? "true" : "false",
            (unsigned long long)v->log_lines, (unsigned long long)v->log_lost,
            (unsigned long long)v->uevents);
}

static void write_egd(FILE *f, const struct egd_stats *st)
{
    fprintf(f, "\"egd\":{\"clients_accepted\":%llu,\"commands\":[%llu,%llu,%llu,%llu,%llu],"
               "\"unknown_commands\":%llu,\"bytes_served\":%llu,\"entropy_bytes_added\":%llu,"
               "\"entropy_bytes_dropped\":%llu,\"full_entropy_bytes\":%llu},",
            (unsigned long long)st->clients_accepted, (unsigned long long)st->commands[0],
            (unsigned long long)st->commands[1], (unsigned long long)st->commands[2],
            (unsigned long long)st->commands[3], (unsigned long long)st->commands[4],
            (unsigned long long)st->unknown_commands, (unsigned long long)st->bytes_served,
            (unsigned long long)st->entropy_bytes_added,
            (unsigned long long)st->entropy_bytes_dropped,
            (unsigned long long)st->full_entropy_bytes);
}

/* "name":value, typed as the key table says: STATUS and randd.conf share one list of keys. */
static void write_key(FILE *f, const struct config *c, size_t i, bool first)
{
    struct config_key_info key;
    char value[PATH_MAX];

    config_key(i, &key);
    config_value_text(c, i, value, sizeof(value));
    fprintf(f, "%s\"%s\":", first ? "" : ",", key.name);
    if (key.quoted)
        json_string(f, value);
    else
        fputs(value, f);
}

static void write_config(FILE *f, const struct config *c)
{
    struct config_key_info key;

    fputs("\"config\":{", f);
    for (size_t i = 0; config_key(i, &key); i++)
        write_key(f, c, i, i == 0);
    fputs("},", f);
}

/* The re-read value of each restart-only key that differs from the one in effect. */
static void write_pending_restart(FILE *f, const struct config *in_effect,
                                  const struct config *reread)
{
    struct config_key_info key;
    bool first = true;

    fputs("\"pending_restart\":{", f);
    for (size_t i = 0; reread && config_key(i, &key); i++)
        if (config_pending_restart(in_effect, reread, i)) {
            write_key(f, reread, i, first);
            first = false;
        }
    fputc('}', f);
}

/* The last self-test (null before the first) and the health tests' false-alarm rate. */
static void write_selftest(FILE *f, const struct selfcheck *sc, unsigned interval)
{
    fprintf(f, "\"selftest\":{\"interval_seconds\":%u,\"runs\":%llu,\"failures\":%llu,"
               "\"last_time\":", interval, (unsigned long long)sc->runs,
            (unsigned long long)sc->failures);
    if (sc->runs == 0) {
        fputs("null,\"last_result\":null,\"last_trigger\":null,\"failed_test\":null},", f);
    } else {
        fprintf(f, "%lld,\"last_seconds\":%.6f,\"last_result\":\"%s\",\"last_trigger\":\"%s\","
                   "\"failed_test\":", (long long)sc->last_time, sc->last_seconds,
                sc->last_passed ? "pass" : "fail", sc->last_trigger);
        if (sc->last_passed)
            fputs("null", f);
        else
            json_string(f, sc->failed);
        fputs("},", f);
    }
    fprintf(f, "\"health\":{\"alpha_log2\":-%d,\"alpha\":%.6g,\"startup_samples\":%d},",
            HEALTH_ALPHA_LOG2, 1.0 / (double)(1ull << HEALTH_ALPHA_LOG2),
            HEALTH_STARTUP_SAMPLES);
}

char *status_json(const struct status_view *v, uint64_t now_ns, size_t *len)
{
    const char *why = pool_not_ready_reason(v->pool);
    char *text = NULL;
    FILE *f = open_memstream(&text, len);

    if (!f)
        return NULL;
    fputs("{\"version\":", f);
    json_string(f, v->version);
    fprintf(f, ",\"uptime_seconds\":%.1f,\"ready\":%s,\"mode\":\"%s\",",
            (double)(now_ns - v->started_ns) / 1e9, why ? "false" : "true",
            v->config->mode == CONFIG_MODE_APPROVED ? "approved" : "default");
    if (why) {
        fputs("\"not_ready_reason\":", f);
        json_string(f, why);
        fputc(',', f);
    }
    write_kernel_only(f, v->pool);
    write_sources(f, v->pool);
    write_cpu_source(f, v);
    if (v->selfcheck)
        write_selftest(f, v->selfcheck, v->config->selftest_interval);
    write_pool_and_kernel(f, v->pool, v->kernel, now_ns);
    write_noise(f, &v->pool->noise);
    if (v->vmgenid)
        write_vmgenid(f, v->vmgenid);
    if (v->nloops)
        write_server(f, v);
    if (v->egd)
        write_egd(f, v->egd);
    write_config(f, v->config);
    write_pending_restart(f, v->config, v->reread);
    fputs("}\n", f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* --- the report as log lines ----------------------------------------------------------- */

static const char *init_time(const struct kernel *k, char *buf, size_t len)
{
    snprintf(buf, len, " %.3f s after randd started", (double)k->init_after_ns / 1e9);
    return buf;
}

void status_log(const struct status_view *v, uint64_t now_ns)
{
    const struct pool *p = v->pool;
    const struct kernel *k = v->kernel;
    const char *why = pool_not_ready_reason(p);
    char init[64], kernel_why[POOL_NOISE_WHY_BYTES];

    log_info("status: %s%s", why ? "not ready: " : "ready", why ? why : "");
    if (!pool_noise_credit_pending(p) && pool_kernel_only(p, kernel_why, sizeof(kernel_why)))
        log_info("  only the kernel's word: getrandom is the only credited source; no noise "
                 "source is: %s", kernel_why);
    for (size_t i = 0; i < p->nsources; i++) {
        const struct source *s = p->sources[i];

        log_info("  source %s: %s, %llu bytes read, %llu used, %llu health failures%s%s",
                 s->name, randd_source_state_name(s->health.state),
                 (unsigned long long)s->bytes_read, (unsigned long long)s->bytes_used,
                 (unsigned long long)s->health.failures,
                 s->health.state == RANDD_SOURCE_QUARANTINED ? ": " : "",
                 s->health.state == RANDD_SOURCE_QUARANTINED ? s->health.reason : "");
    }
    if (v->selfcheck && v->selfcheck->runs)
        log_info("  self-tests: %llu runs, %llu failed; the last (%s) %s%s",
                 (unsigned long long)v->selfcheck->runs,
                 (unsigned long long)v->selfcheck->failures, v->selfcheck->last_trigger,
                 v->selfcheck->last_passed ? "passed" : "failed: ", v->selfcheck->failed);
    log_info("  pool: %s, %llu reseeds, last %.0f s ago, %llu bytes out",
             p->seeded ? "seeded" : "unseeded", (unsigned long long)p->reseeds,
             p->seeded ? (double)(now_ns - p->last_reseed_ns) / 1e9 : 0.0,
             (unsigned long long)p->bytes_served);
    if (!k->enabled)
        log_info("  kernel feed: off: %s", k->off_reason);
    else
        log_info("  kernel feed: kernel %s%s, %llu top-ups, %llu reseeds, %llu bits offered%s%s",
                 k->initialised ? "initialised" : "not initialised",
                 k->init_seen ? init_time(k, init, sizeof(init)) : "",
                 (unsigned long long)k->topups, (unsigned long long)k->reseeds,
                 (unsigned long long)k->bits_offered,
                 k->last_error[0] ? ", last error: " : "", k->last_error);
}
