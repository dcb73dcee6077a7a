/* What randctl assess's files share: the request its options make, the progress line, and
 * each mode's entry (assess.c parses and reads the file; assess_iid.c is the IID track;
 * assess_report.c writes the HTML report). A new mode adds an option to assess.c's table,
 * a field here, and a file of its own. */
#ifndef RANDCTL_ASSESS_H
#define RANDCTL_ASSESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entropy_assess.h"
#include "entropy_iid.h"
#include "entropy_restart.h"
#include "output_file.h"

struct assess_request {
    const char *path;           /* FILE, or - for stdin */
    unsigned bits;              /* --bits W; 0: inferred */
    unsigned flags;             /* RANDD_EA_TRUNCATE */
    bool progress;              /* --progress, or stderr is a terminal */
    bool iid;                   /* --iid: SP 800-90B section 5 */
    bool no_permutations;       /* --no-permutations: the IID track stops before its shuffles */
    bool stop_when_settled;     /* --stop-when-settled: stop the shuffles once chi-square or
                                 * LRS failed (the verdict is settled: not IID) */
    bool seeded;                /* --seed HEX: the shuffles of an earlier run */
    uint8_t seed[RANDD_IID_SEED_BYTES];
    const char *report;         /* --report OUT.html; NULL: none */
    struct randd_output *report_file;   /* its file, opened before the assessment runs */
    bool force;                 /* --force: the report may replace a file of ours */
    double claim;               /* --claim H bits per sample; NAN: none */
};

/* The progress line on stderr: on a terminal one line, redrawn; otherwise a line a stage. */
struct assess_progress {
    bool tty;
    int percent;
    char what[64];
};
void assess_show_progress(void *arg, double done, const char *what);
/* Clears a terminal's progress line. */
void assess_progress_done(const struct assess_progress *p);

/* With --claim H: prints whether the claim holds against h, the min-entropy the track
 * assessed (NAN: the track cannot credit the samples, as an IID run on data that failed its
 * tests), and returns EXIT_OK when it holds, EXIT_FAILED when it does not. Without a claim,
 * prints nothing and returns EXIT_OK. */
int assess_claim_verdict(const struct assess_request *req, double h);

/* assess_iid.c: runs the IID track on the samples, prints it, writes the report if asked.
 * Returns the exit code. */
int assess_iid(const struct assess_request *req, const uint8_t *samples, size_t n);

/* assess_report.c: what a report shows. Each part may be NULL (absent). */
struct assess_report {
    const char *path;                       /* the samples' file, as named */
    const uint8_t *samples;
    size_t n;
    unsigned bits;
    double claim;                           /* NAN: none claimed */
    const struct randd_ea_result *non_iid;
    const struct randd_iid_result *iid;
    const struct randd_ea_restart_result *restart;  /* samples: the restart matrix */
};
/* Opens the page's file (output_file.h: a new file, or with force one of ours replaced) before
 * the assessment runs, so a path it cannot write fails at once, not half an hour later.
 * Returns EXIT_OK, or EXIT_FAILED having said why. */
int assess_report_open(struct randd_output *o, const char *out, bool force);
/* Writes the page into o's file and puts it at its path. Returns EXIT_OK, or EXIT_FAILED
 * having said why (the path is left as it was). */
int assess_report_write(struct randd_output *o, const struct assess_report *r);

/* The restarts assessed well above H_I (a bit a sample or more, validation passed): a source
 * that warms up as it runs gives richer samples just after a start. The note that says so,
 * once for the text output and the report. */
bool assess_restart_above_steady(const struct randd_ea_restart_result *r);
extern const char assess_restart_above_note[];

#endif
