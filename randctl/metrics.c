/* randctl metrics: the daemon's STATUS in the Prometheus text exposition format, for
 * node_exporter's textfile collector. Names carry the randd_ prefix, counters end in
 * _total, units are base units; --output writes the file atomically (temp, then rename). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "output_file.h"
#include "protocol.h"
#include "randctl.h"

struct scalar {
    const char *name, *type, *help, *path;
};

static const struct scalar scalars[] = {
    { "randd_ready", "gauge", "1 when randd serves output: seeded, with a healthy source.", "ready" },
    { "randd_kernel_only", "gauge", "1 when getrandom is the only credited source: output is "
      "exactly as unpredictable as the kernel's.", "kernel_only" },
    { "randd_uptime_seconds", "gauge", "Seconds since randd started.", "uptime_seconds" },
    { "randd_pool_seeded", "gauge", "1 when the generator has been seeded.", "pool.seeded" },
    { "randd_reseeds_total", "counter", "Seeds and reseeds of the generator.", "pool.reseeds" },
    { "randd_vm_generations_total", "counter",
      "VM generation changes seen (the VM was restored from a snapshot or cloned).",
      "pool.vm_generations" },
    { "randd_vm_rekeys_total", "counter",
      "Generator rekeys at once after lost kernel log records (a VM fork possible, not "
      "confirmed): output went on under a new key.", "pool.vm_rekeys" },
    { "randd_kernel_feed_enabled", "gauge", "1 when randd feeds the kernel's pool.", "kernel.enabled" },
    { "randd_kernel_feed_configured", "gauge", "1 when the config asks for the kernel feed "
      "(kernel_topup).", "config.kernel_topup" },
    { "randd_kernel_topup_interval_seconds", "gauge",
      "Seconds between top-ups once the kernel is initialised (0: none).",
      "config.kernel_topup_interval" },
    { "randd_kernel_initialised", "gauge", "1 when the kernel's generator is initialised.",
      "kernel.initialised" },
    { "randd_kernel_topups_total", "counter", "RNDADDENTROPY calls that succeeded.", "kernel.topups" },
    { "randd_kernel_reseeds_total", "counter", "RNDRESEEDCRNG calls that succeeded.", "kernel.reseeds" },
    { "randd_clients", "gauge", "Clients connected now (protocol v1 and EGD).", "clients.connected" },
    { "randd_clients_accepted_total", "counter", "Protocol v1 clients accepted.", "clients.accepted" },
    { "randd_clients_busy_total", "counter",
      "Protocol v1 clients turned away BUSY (max_clients or their uid's share), or closed to make room.",
      "clients.busy" },
    { "randd_clients_over_uid_share_total", "counter",
      "Clients (v1 and EGD) turned away: their uid held its fair share of max_clients.",
      "clients.over_uid_share" },
    { "randd_clients_evicted_total", "counter",
      "Idle clients (v1 and EGD) closed to make room for a uid under its fair share.",
      "clients.evicted" },
    { "randd_served_bytes_total", "counter", "Random bytes served by BYTES and RANGE.", "bytes_served" },
    { "randd_egd_clients_accepted_total", "counter", "EGD clients accepted.", "egd.clients_accepted" },
    { "randd_egd_served_bytes_total", "counter", "Random bytes served over EGD.", "egd.bytes_served" },
    { "randd_egd_unknown_commands_total", "counter", "EGD connections closed for an unknown command.",
      "egd.unknown_commands" },
    { "randd_selftest_runs_total", "counter",
      "Self-test runs (at start, every selftest_interval, randctl selftest).",
      "selftest.runs" },
    { "randd_selftest_failures_total", "counter",
      "Self-test runs that failed (output stopped).", "selftest.failures" },
    { "randd_selftest_last_timestamp_seconds", "gauge",
      "Unix time of the last self-test run.", "selftest.last_time" },
    { "randd_health_alpha", "gauge",
      "False-alarm probability each health test's cutoff is set for (SP 800-90B 4.4).",
      "health.alpha" },
};

static const char *number(const char *v)
{
    return !v || !strcmp(v, "null") ? NULL : !strcmp(v, "true") ? "1" : !strcmp(v, "false") ? "0" : v;
}

static void header(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values come from randd, but escape them as the format asks all the same. */
static void label_value(FILE *out, const char *v)
{
    for (; *v; v++)
        if (*v == '\\' || *v == '"')
            fprintf(out, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", out);
        else
            fputc(*v, out);
}

/* Each source's field, divided by scale (bits to the base unit bytes: 8). */
static void per_source_scaled(FILE *out, const struct json_flat *j, const char *name,
                              const char *type, const char *help, const char *field,
                              double scale)
{
    char path[96];

    header(out, name, type, help);
    for (int i = 0;; i++) {
        const char *source, *v;

        snprintf(path, sizeof(path), "sources[%d].name", i);
        if (!(source = json_get(j, path)))
            break;
        snprintf(path, sizeof(path), "sources[%d].%s", i, field);
        if (!(v = number(json_get(j, path))))
            continue;
        fprintf(out, "%s{source=\"", name);
        label_value(out, source);
        if (scale == 1)
            fprintf(out, "\"} %s\n", v);
        else
            fprintf(out, "\"} %.3f\n", atof(v) / scale);
    }
}

static void per_source(FILE *out, const struct json_flat *j, const char *name, const char *type,
                       const char *help, const char *field)
{
    per_source_scaled(out, j, name, type, help, field, 1);
}

static void source_states(FILE *out, const struct json_flat *j)
{
    char path[96];

    header(out, "randd_source_state", "gauge",
           "1 for the state each entropy source is in (startup, healthy, quarantined).");
    for (int i = 0;; i++) {
        const char *source, *state;

        snprintf(path, sizeof(path), "sources[%d].name", i);
        if (!(source = json_get(j, path)))
            break;
        snprintf(path, sizeof(path), "sources[%d].state", i);
        state = json_get(j, path);
        for (int s = 0; s < RANDD_SOURCE_STATE_COUNT; s++) {
            const char *name = randd_source_state_name(s);

            fputs("randd_source_state{source=\"", out);
            label_value(out, source);
            fprintf(out, "\",state=\"%s\"} %d\n", name, state && !strcmp(state, name));
        }
    }
}

/* Whether the CPU's noise source (rdseed, rndrrs, darn, trng) is in use: 0 on a CPU without
 * it, where no randd_source_state series names it. */
static void cpu_source(FILE *out, const struct json_flat *j)
{
    const char *name = json_get(j, "cpu_source.name"), *in_use = json_get(j, "cpu_source.in_use");

    if (!name || !in_use)
        return;
    header(out, "randd_cpu_source_in_use", "gauge",
           "1 when the CPU's noise source is among the sources; 0: the CPU has none, or it "
           "is off (STATUS cpu_source.reason says which).");
    fputs("randd_cpu_source_in_use{source=\"", out);
    label_value(out, name);
    fprintf(out, "\"} %d\n", !strcmp(in_use, "true"));
}

/* The generator serving ordinary output, by STATUS's pool.engine, and with a DRBG engine its
 * SP 800-90A mechanism (pool.drbg.mechanism). */
static void engine(FILE *out, const struct json_flat *j)
{
    const char *name = json_get(j, "pool.engine"), *drbg = json_get(j, "pool.drbg.mechanism");

    if (!name)
        return;
    header(out, "randd_engine", "gauge",
           "1, labelled by the generator serving ordinary output (engine) and, for an "
           "SP 800-90A DRBG engine, its mechanism (drbg; \"\" otherwise).");
    fputs("randd_engine{engine=\"", out);
    label_value(out, name);
    fputs("\",drbg=\"", out);
    label_value(out, drbg && strcmp(drbg, "null") ? drbg : "");
    fputs("\"} 1\n", out);
}

/* The mode (STATUS's mode): approved, or default. */
static void mode(FILE *out, const struct json_flat *j)
{
    const char *name = json_get(j, "mode");

    if (!name)
        return;                     /* a daemon from before modes */
    header(out, "randd_mode", "gauge",
           "1, labelled by the mode: approved (everything on the output path SP 800-90A/B/C "
           "approved: docs/approved-mode.md) or default.");
    fputs("randd_mode{mode=\"", out);
    label_value(out, name);
    fputs("\"} 1\n", out);
}

/* 1 for a source whose configured credit is above what its assessment at start found
 * (STATUS's assessment_warning, a sentence or null), 0 otherwise. */
static void assessment_warnings(FILE *out, const struct json_flat *j)
{
    char path[96];

    header(out, "randd_source_assessment_warning", "gauge",
           "1 when an assessment of a source's raw bytes found less min-entropy than it is "
           "credited with (the credit stays; STATUS says by how much).");
    for (int i = 0;; i++) {
        const char *source, *warning;

        snprintf(path, sizeof(path), "sources[%d].name", i);
        if (!(source = json_get(j, path)))
            break;
        snprintf(path, sizeof(path), "sources[%d].assessment_warning", i);
        warning = json_get(j, path);
        fputs("randd_source_assessment_warning{source=\"", out);
        label_value(out, source);
        fprintf(out, "\"} %d\n", warning && strcmp(warning, "null") != 0);
    }
}

/* One counter per name of a set (protocol.h's tables: STATUS writes the same keys). */
static void labelled(FILE *out, const struct json_flat *j, const char *name, const char *help,
                     const char *label, const char *prefix, const char *(*key)(int), int n)
{
    char path[96];

    header(out, name, "counter", help);
    for (int i = 0; i < n; i++) {
        const char *v;

        snprintf(path, sizeof(path), "%s.%s", prefix, key(i));
        if ((v = number(json_get(j, path))))
            fprintf(out, "%s{%s=\"%s\"} %s\n", name, label, key(i), v);
    }
}

/* More values of a counter labelled() began. */
static void labelled_more(FILE *out, const struct json_flat *j, const char *name,
                          const char *label, const char *prefix, const char *(*key)(int), int n)
{
    char path[96];

    for (int i = 0; i < n; i++) {
        const char *v;

        snprintf(path, sizeof(path), "%s.%s", prefix, key(i));
        if ((v = number(json_get(j, path))))
            fprintf(out, "%s{%s=\"%s\"} %s\n", name, label, key(i), v);
    }
}

static const char *noise_mode_name(int i)
{
    return i ? "full_entropy" : "prediction_resistant";
}

/* The noise reservoir (STATUS's noise): entropy in bytes (bits / 8), as elsewhere. */
static void noise_metrics(FILE *out, const struct json_flat *j)
{
    static const struct { const char *name, *type, *help, *field; double scale; } per_mode[] = {
        { "randd_noise_consumed_entropy_bytes_total", "counter",
          "Noise-source entropy each mode spent, margin included, in bytes (bits / 8).",
          "consumed_bits", 8 },
        { "randd_noise_served_bytes_total", "counter",
          "Bytes served with prediction resistance or full entropy.", "served_bytes", 1 },
    };
    char path[96];
    const char *v;

    if ((v = number(json_get(j, "noise.available_bits")))) {
        header(out, "randd_noise_available_entropy_bytes", "gauge",
               "Noise-source entropy ready for the modes, in bytes (bits / 8).");
        fprintf(out, "randd_noise_available_entropy_bytes %.3f\n", atof(v) / 8);
    }
    if ((v = number(json_get(j, "noise.waiting")))) {
        header(out, "randd_noise_requests_waiting", "gauge",
               "Prediction-resistant and full-entropy requests waiting for noise.");
        fprintf(out, "randd_noise_requests_waiting %s\n", v);
    }
    if ((v = number(json_get(j, "noise.noise_reseeds")))) {
        header(out, "randd_noise_reseeds_total", "counter",
               "Reseeds from noise-source entropy (one a prediction-resistant request).");
        fprintf(out, "randd_noise_reseeds_total %s\n", v);
    }
    for (size_t k = 0; k < sizeof(per_mode) / sizeof(per_mode[0]); k++) {
        header(out, per_mode[k].name, per_mode[k].type, per_mode[k].help);
        for (int m = 0; m < 2; m++) {
            snprintf(path, sizeof(path), "noise.%s.%s", noise_mode_name(m), per_mode[k].field);
            if (!(v = number(json_get(j, path))))
                continue;
            if (per_mode[k].scale == 1)
                fprintf(out, "%s{mode=\"%s\"} %s\n", per_mode[k].name, noise_mode_name(m), v);
            else
                fprintf(out, "%s{mode=\"%s\"} %.3f\n", per_mode[k].name, noise_mode_name(m),
                        atof(v) / per_mode[k].scale);
        }
    }
}

/* What tells randd of a restored or cloned VM (STATUS's vmgenid), one label per watch; a
 * daemon older than the object has none of these. */
static void vmgenid_metrics(FILE *out, const struct json_flat *j)
{
    static const struct { const char *watch, *open, *count; } watches[] = {
        { "kernel_log", "vmgenid.kernel_log", "vmgenid.kernel_log_lines" },
        { "uevent", "vmgenid.uevent", "vmgenid.uevents" },
    };
    const size_t n = sizeof(watches) / sizeof(watches[0]);
    const char *v;

    if (!json_get(j, "vmgenid.kernel_log"))
        return;
    header(out, "randd_vm_generation_watch", "gauge",
           "1 for each announcement of a new VM generation randd watches (kernel_log: the "
           "kernel's log line in /dev/kmsg; uevent: NEW_VMGENID, Linux 6.8 only).");
    for (size_t w = 0; w < n; w++)
        if ((v = number(json_get(j, watches[w].open))))
            fprintf(out, "randd_vm_generation_watch{watch=\"%s\"} %s\n", watches[w].watch, v);
    header(out, "randd_vm_generation_announcements_total", "counter",
           "Announcements of a new VM generation each watch brought (a kernel that sends both "
           "announces one change twice).");
    for (size_t w = 0; w < n; w++)
        if ((v = number(json_get(j, watches[w].count))))
            fprintf(out, "randd_vm_generation_announcements_total{watch=\"%s\"} %s\n",
                    watches[w].watch, v);
    if ((v = number(json_get(j, "vmgenid.kernel_log_lost")))) {
        header(out, "randd_vm_generation_kernel_log_lost_total", "counter",
               "Times kernel log records were overwritten before randd read them (one could "
               "have announced a new VM generation).");
        fprintf(out, "randd_vm_generation_kernel_log_lost_total %s\n", v);
    }
}

/* randd_up tells "randd down" (a fresh file saying 0) from "the timer stopped" (a stale
 * file): with no STATUS (j NULL) it is the only metric written. */
static void write_metrics(FILE *out, const struct json_flat *j)
{
    const char *v;

    header(out, "randd_up", "gauge", "1 when randd answered STATUS, 0 when it did not.");
    fprintf(out, "randd_up %d\n", j != NULL);
    if (!j)
        return;
    for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
        if (!(v = number(json_get(j, scalars[i].path))))
            continue;
        header(out, scalars[i].name, scalars[i].type, scalars[i].help);
        fprintf(out, "%s %s\n", scalars[i].name, v);
    }
    if ((v = json_get(j, "kernel.bits_offered"))) {   /* base unit: bytes */
        header(out, "randd_kernel_credited_entropy_bytes_total", "counter",
               "Entropy credited to the kernel with RNDADDENTROPY, in bytes (bits / 8).");
        fprintf(out, "randd_kernel_credited_entropy_bytes_total %.3f\n", atof(v) / 8);
    }
    if ((v = json_get(j, "selftest.last_result")) && strcmp(v, "null")) {
        header(out, "randd_selftest_last_success", "gauge",
               "1 when the last self-test passed; 0: failed, and no output is served.");
        fprintf(out, "randd_selftest_last_success %d\n", !strcmp(v, "pass"));
    }
    source_states(out, j);
    cpu_source(out, j);
    mode(out, j);
    engine(out, j);
    per_source(out, j, "randd_source_read_bytes_total", "counter",
               "Raw bytes read from each entropy source and health-tested.", "bytes_read");
    per_source(out, j, "randd_source_used_bytes_total", "counter",
               "Raw bytes from each source conditioned into the pool.", "bytes_used");
    per_source(out, j, "randd_source_health_failures_total", "counter",
               "SP 800-90B health test failures of each source.", "health_failures");
    per_source_scaled(out, j, "randd_source_credited_entropy_bytes_total", "counter",
                      "Entropy credited from each source's raw bytes, in bytes (bits / 8).",
                      "credited_bits", 8);
    per_source(out, j, "randd_source_cpu_seconds_total", "counter",
               "CPU time spent producing each source's samples (the jitter worker).",
               "cpu_seconds");
    per_source_scaled(out, j, "randd_source_credit_ratio", "gauge",
                      "Entropy credited per raw byte of each source, as a fraction of its 8 bits.",
                      "entropy_per_byte", 8);
    per_source_scaled(out, j, "randd_source_assessed_ratio", "gauge",
                      "Min-entropy an assessment measured per raw byte, as a fraction of 8 bits "
                      "(absent until assessed).", "assessed_entropy_per_byte", 8);
    per_source(out, j, "randd_source_assessments_total", "counter",
               "SP 800-90B assessments of each source's raw bytes that finished.",
               "assessments");
    assessment_warnings(out, j);
    per_source(out, j, "randd_source_injected_failures_total", "counter",
               "Health test failures induced by randctl inject-failure (also counted in "
               "randd_source_health_failures_total).", "injected_failures");
    per_source_scaled(out, j, "randd_source_health_entropy_bytes", "gauge",
                      "Min-entropy per sample each source's health test cutoffs are set for, "
                      "in bytes (bits / 8).", "health_entropy_per_sample", 8);
    labelled(out, j, "randd_requests_total", "Protocol v1 requests, by op (BYTES and SEED "
             "with a mode under their own: bytes_pr, bytes_full, seed_pr, seed_full).", "op",
             "requests", randd_op_name, RANDD_OP_LAST + 1);
    labelled_more(out, j, "randd_requests_total", "op", "requests", randd_mode_request_name,
                  RANDD_MODE_REQUEST_COUNT);
    labelled(out, j, "randd_replies_total", "Protocol v1 replies, by status.", "status",
             "replies", randd_status_name, RANDD_STATUS_COUNT);
    noise_metrics(out, j);
    vmgenid_metrics(out, j);
}

/* Writes next to path and renames over it, so a collector never reads half a file. The
 * file is rewritten every minute (randd-metrics.timer): replacing a file of ours is the rule,
 * but a symlink, a hard link or another user's file at the path is refused (output_file.h).
 * Returns 0, or a negative errno with why. */
static int write_atomically(const char *path, const struct json_flat *j, char *why, size_t len)
{
    struct randd_output o;
    FILE *f;
    int rc;

    if ((rc = randd_output_open(&o, path, 0644, RANDD_OUTPUT_REPLACE, why, len)) < 0)
        return rc;
    if (!(f = randd_output_stream(&o))) {
        rc = -errno;
        snprintf(why, len, "%s: %s", path, strerror(errno));
        randd_output_abort(&o);
        return rc;
    }
    write_metrics(f, j);
    return randd_output_commit(&o, why, len);
}

static int run_metrics(int argc, char **argv)
{
    const char *output = NULL;
    char why[PATH_MAX + 256];
    struct json_flat j;
    char *text;
    int rc;

    if (argc == 3 && !strcmp(argv[1], "--output"))
        output = argv[2];
    else if (argc != 1)
        return usage_error(&cmd_metrics, "bad argument: %s", argv[1]);
    if ((rc = fetch_status("metrics", &text)) != EXIT_OK) {
        if (output && write_atomically(output, NULL, why, sizeof(why)) < 0)
            fprintf(stderr, "randctl: metrics: --output %s\n", why);
        else if (!output)
            write_metrics(stdout, NULL);
        return rc;
    }
    rc = json_flatten(text, &j);
    free(text);
    if (rc < 0) {
        fprintf(stderr, "randctl: metrics: the daemon's STATUS is not valid JSON\n");
        return EXIT_FAILED;
    }
    if (output)
        rc = write_atomically(output, &j, why, sizeof(why));
    else
        write_metrics(stdout, &j);
    json_flat_free(&j);
    if (rc < 0) {          /* about the file, not the daemon: not fail()'s exit codes */
        fprintf(stderr, "randctl: metrics: --output %s\n", why);
        return EXIT_FAILED;
    }
    return EXIT_OK;
}

const struct command cmd_metrics = {
    "metrics", "metrics [--output FILE]         status as Prometheus metrics (FILE: atomic)",
    run_metrics,
};
