/* Logging for the daemon: plain lines on stderr, with sd-daemon "<N>" priority prefixes
 * when stderr is the journal (JOURNAL_STREAM). Owns nothing else. */
#ifndef RANDD_LOG_H
#define RANDD_LOG_H

#include <syslog.h>

/* Decides the format once, from the environment and stderr. */
void log_init(void);

void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)     log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)  log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)    log_msg(LOG_INFO, __VA_ARGS__)

#endif
