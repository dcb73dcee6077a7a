/* randctl status: the daemon's STATUS for people (status_view.c's compact view, refreshed
 * with rates under --watch), as JSON (--json), or one "path: value" line per field for
 * scripts (--keys); with, in the text forms, whether this client maps the VM generation word
 * beside the socket. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "generation.h"
#include "json.h"
#include "randctl.h"
#include "status_view.h"

#define MIN_WIDTH 40              /* narrower, and the view cuts more than it shows */
#define PIPE_WIDTH 100            /* not a terminal and no COLUMNS */

/* One "path: value" line per field ("sources[0].state: healthy"): easy to grep. */
static int print_keys(const struct json_flat *flat)
{
    for (size_t i = 0; i < flat->count; i++)
        printf("%s: %s\n", flat->pairs[i].path, flat->pairs[i].value);
    return EXIT_OK;
}

/* Not the daemon's word but this client's view of it: mapped as librandd's generators map it
 * (lib/generation.c, with the same checks), or why not. */
static const char *generation_word(char *out, size_t n)
{
    char path[PATH_MAX], why[PATH_MAX + 160];
    const uint64_t *word;

    if (randd_generation_path(daemon_socket(), path, sizeof(path)) < 0)
        return NULL;
    word = randd_generation_map(path, why, sizeof(why));
    if (word)
        snprintf(out, n, "mapped %s (generation %llu)", path,
                 (unsigned long long)randd_generation_load(word));
    else
        snprintf(out, n, "unavailable: %s", why);
    randd_generation_unmap(word);
    return out;
}

/* COLUMNS, else the terminal's width, else 100. */
static int view_width(void)
{
    const char *env = getenv("COLUMNS");
    struct winsize ws;
    int width = env ? atoi(env) : 0;

    if (width <= 0 && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
        width = ws.ws_col;
    if (width <= 0)
        width = PIPE_WIDTH;
    return width < MIN_WIDTH ? MIN_WIDTH : width;
}

/* Colour for a terminal only, and not when NO_COLOR asks for none (no-color.org). */
static int use_colour(void)
{
    const char *no = getenv("NO_COLOR");

    return isatty(STDOUT_FILENO) && !(no && *no);
}

static int fetch(struct json_flat *flat)
{
    char *text;
    int rc;

    if ((rc = fetch_status("status", &text)) != EXIT_OK)
        return rc;
    rc = json_flatten(text, flat);
    free(text);
    if (rc < 0) {
        fprintf(stderr, "randctl: status: the daemon's STATUS is not valid JSON\n");
        return EXIT_FAILED;
    }
    return EXIT_OK;
}

static double monotonic(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

/* Redraws the view every interval until interrupted, with rates from the STATUS before. On a
 * terminal each view replaces the last; elsewhere they follow one another, a blank line
 * apart. A daemon that stops answering is said so on each refresh, and watched for. */
static int watch(double interval)
{
    struct json_flat now = { 0 }, prev = { 0 };
    int tty = isatty(STDOUT_FILENO), have_prev = 0;
    struct sigaction sa = { .sa_handler = on_stop };
    double then = 0;
    char gen[PATH_MAX + 256];

    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!stop) {
        struct status_view v = { .width = view_width(), .colour = use_colour() };
        struct timespec pause = { (time_t)interval,
                                  (long)((interval - (time_t)interval) * 1e9) };
        double t = monotonic();

        if (tty)
            fputs("\033[H\033[2J", stdout);
        fflush(stdout);
        if (fetch(&now) == EXIT_OK) {
            v.prev = have_prev ? &prev : NULL;
            v.seconds = t - then;
            v.generation = generation_word(gen, sizeof(gen));
            status_view_print(stdout, &now, &v);
            json_flat_free(&prev);
            prev = now;
            now = (struct json_flat){ 0 };
            have_prev = 1;
            then = t;
        } else {
            json_flat_free(&prev);     /* a restarted daemon's counters start again */
            have_prev = 0;
        }
        if (!tty)
            putchar('\n');
        fflush(stdout);
        while (nanosleep(&pause, &pause) < 0 && errno == EINTR && !stop)
            ;
    }
    json_flat_free(&prev);
    return EXIT_OK;
}

static int view(void)
{
    struct status_view v = { .width = view_width(), .colour = use_colour() };
    struct json_flat flat;
    char gen[PATH_MAX + 256];
    int rc;

    if ((rc = fetch(&flat)) != EXIT_OK)
        return rc;
    v.generation = generation_word(gen, sizeof(gen));
    status_view_print(stdout, &flat, &v);
    json_flat_free(&flat);
    return EXIT_OK;
}

static int run_status(int argc, char **argv)
{
    int json = 0, keys = 0, watching = 0, interval_given = 0, rc;
    double interval = 2;
    struct json_flat flat;
    char gen[PATH_MAX + 256];

    for (int i = 1; i < argc; i++) {
        char *end;

        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--keys")) {
            keys = 1;
        } else if (!strcmp(argv[i], "--watch")) {
            watching = 1;
        } else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
            interval = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(interval >= 0.1 && interval <= 3600))
                return usage_error(&cmd_status, "--interval: not seconds from 0.1 to 3600: %s",
                                   argv[i]);
            interval_given = 1;
        } else {
            return usage_error(&cmd_status, "bad argument: %s", argv[i]);
        }
    }
    if (json + keys + watching > 1)
        return usage_error(&cmd_status, "--json, --keys and --watch exclude one another");
    if (interval_given && !watching)     /* the synopsis nests it: a refresh of what? */
        return usage_error(&cmd_status, "--interval needs --watch");
    if (watching)
        return watch(interval);
    if (!json && !keys)
        return view();
    if (json) {
        char *text;

        if ((rc = fetch_status("status", &text)) != EXIT_OK)
            return rc;
        fputs(text, stdout);
        free(text);
        return EXIT_OK;
    }
    if ((rc = fetch(&flat)) != EXIT_OK)
        return rc;
    print_keys(&flat);
    json_flat_free(&flat);
    if (generation_word(gen, sizeof(gen)))
        printf("librandd.vm_generation_word: %s\n", gen);
    return EXIT_OK;
}

const struct command cmd_status = {
    "status", "status [--keys | --json | --watch [--interval S]]  how the daemon is doing",
    run_status,
};
