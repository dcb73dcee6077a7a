/* Raw-noise capture: one source's raw samples, one per byte, into a file for SP 800-90B
 * tooling (randd --capture). Never touches a pool or generator. */
#ifndef RANDD_CAPTURE_H
#define RANDD_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define CAPTURE_MAX_RESTARTS 1000000u     /* --restarts: SP 800-90B 3.1.4 asks for 1000 */

/* Whether name is a source --capture knows: a usage error is caught before anything opens. */
bool capture_is_source(const char *name);

/* The sources --capture knows, as a usage message lists them. */
const char *capture_source_list(void);

/* The config key ("hwrng", "cpu_source", ...) that is "no" for source name, or NULL: a
 * source the config turns off is not captured, as the daemon would not read it. */
const char *capture_config_turns_off(const struct config *c, const char *name);

/* Captures count samples of source name (capture_source_list) into path; with
 * restarts > 0, restarts rows of count samples, the source reopened before each (a row
 * dataset, SP 800-90B 3.1.4.1). The file is created new; with replace, a file of ours
 * already there is replaced (internal/output_file.h: never a symlink, a hard link or another
 * user's file), and only once every sample is written. Returns 0 with a summary in why (the
 * health tests' outcome included), or a negative errno with the reason in why. */
int capture_run(const struct config *c, const char *name, unsigned long long count,
                unsigned long long restarts, const char *path, bool replace, char *why,
                size_t whylen);

#endif
