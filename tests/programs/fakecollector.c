/* A stand-in for libcollector.so in rdbx's launcher tests: the entry
 * points of the collector design, each writing one log line, so the tests
 * see what rdbx asked for. Not a profiler.
 *   start ... pid_ok=1|0 mode=M   (pid_ok: the config's pid is getpid())
 *   sample number=N cause=C label=L, pause, resume, end
 * FAKE_COLLECTOR_FAIL=1 makes __rdbx_collector_start return -3. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;
static int samples;

static void decode(const char *in, size_t n, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < size; i++) {
        if (in[i] == '%' && i + 2 < n + 1) {
            char hex[3] = {in[i + 1], in[i + 2], 0};
            out[o++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = 0;
}

/* The value of KEY in a config string, decoded into out. */
static int field(const char *config, const char *key, char *out, size_t size)
{
    size_t k = strlen(key);
    for (const char *p = config; p && *p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
        if (strncmp(p, key, k) == 0 && p[k] == '=') {
            const char *v = p + k + 1;
            const char *end = strchr(v, ';');
            decode(v, end ? (size_t)(end - v) : strlen(v), out, size);
            return 1;
        }
    }
    return 0;
}

static void log_line(const char *text)
{
    char line[4096];
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int n = snprintf(line, sizeof line, "%lld %s\n",
                     (long long)now.tv_sec * 1000000000LL + now.tv_nsec, text);
    if (log_fd >= 0)
        write(log_fd, line, (size_t)n);
}

int __rdbx_collector_start(const char *config)
{
    char expt[PATH_MAX], path[PATH_MAX + 8], pid[32] = "", mode[32] = "", exe[PATH_MAX];
    char line[3 * PATH_MAX];
    if (getenv("FAKE_COLLECTOR_FAIL"))
        return -3;
    if (!field(config, "expt", expt, sizeof expt))
        return -1;
    field(config, "pid", pid, sizeof pid);
    field(config, "mode", mode, sizeof mode);
    snprintf(path, sizeof path, "%s/log", expt);
    log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (log_fd < 0)
        return -2;
    snprintf(line, sizeof line, "start pid=%d pid_ok=%d mode=%s", (int)getpid(),
             atol(pid) == (long)getpid(), mode);
    log_line(line);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        snprintf(line, sizeof line, "object path=%s base=0 lo=0 hi=0", exe);
        log_line(line);
    }
    return 0;
}

int __rdbx_collector_sample(const char *label, int cause)
{
    static const char *causes[] = {"start", "end", "pause", "resume", "periodic", "manual",
                                   "dbx-stop", "api", "signal", "fork-before", "fork-after"};
    char line[512];
    snprintf(line, sizeof line, "sample number=%d cause=%s label=%s", ++samples,
             cause >= 0 && cause <= 10 ? causes[cause] : "?", label && *label ? label : "-");
    log_line(line);
    return 0;
}

int __rdbx_collector_pause(void) { log_line("pause cause=debugger"); return 0; }
int __rdbx_collector_resume(void) { log_line("resume cause=debugger"); return 0; }
int __rdbx_collector_stop(void) { log_line("end"); return 0; }
const char *__rdbx_collector_version(void) { return "fake 1"; }

__attribute__((constructor)) static void from_environment(void)
{
    const char *config = getenv("RDBX_COLLECTOR_CONFIG");
    char mode[32];
    if (config && field(config, "mode", mode, sizeof mode) && strcmp(mode, "collect") == 0)
        __rdbx_collector_start(config);
}
