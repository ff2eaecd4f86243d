/* collector_api.h: calls a program can make to the rdbx collector.
 *
 * The functions are weak references: a program built with this header
 * runs unchanged when libcollector.so is not loaded (the calls do
 * nothing). Under `rdbx collect` or rdbx with `collector enable`, they
 * record a labelled sample, pause or resume recording, or end the
 * experiment early.
 */
#ifndef RDBX_COLLECTOR_API_H
#define RDBX_COLLECTOR_API_H

#ifdef __cplusplus
extern "C" {
#endif

void collector_sample(const char *name) __attribute__((weak));
void collector_pause(void) __attribute__((weak));
void collector_resume(void) __attribute__((weak));
void collector_terminate_expt(void) __attribute__((weak));

#define collector_sample(name) \
    do { if (collector_sample) collector_sample(name); } while (0)
#define collector_pause() \
    do { if (collector_pause) collector_pause(); } while (0)
#define collector_resume() \
    do { if (collector_resume) collector_resume(); } while (0)
#define collector_terminate_expt() \
    do { if (collector_terminate_expt) collector_terminate_expt(); } while (0)

#ifdef __cplusplus
}
#endif

#endif
