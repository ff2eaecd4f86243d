/* Functions for interactive calls (`call`, `print FUNC(ARGS)`), and a
 * program that is stopped in different places:
 *   call_args          calls stop_here() once, prints what it saw, exits 0
 *   call_args sleep    nanosleep(2 s); exit status = elapsed time in 100 ms
 *   call_args read     read() on a pipe a thread writes "data" to after 1 s;
 *                      exit 0 when the data was read, 2 on EINTR, 3 otherwise
 * Every mode prints "usr1=N" at the end: how many SIGUSR1 it handled. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int counter;
static volatile int usr1_seen;
const char *last_text = "none";

double mix(int a, double b, long c, float d, char *s)
{
    return a + b + c + d + (double)strlen(s);
}

long many(long a, long b, long c, long d, long e, long f, long g, long h)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}

double many_doubles(double a, double b, double c, double d, double e, double f,
                    double g, double h, double i, double j)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}

/* Integers and doubles past their registers, interleaved on the stack. */
double crowded(long a, long b, long c, long d, long e, long f, long g,
               double x0, double x1, double x2, double x3, double x4, double x5,
               double x6, double x7, double x8, long h)
{
    return (double)(a + b + c + d + e + f) + 100 * g + x0 + x1 + x2 + x3 + x4 + x5 + x6 +
           x7 + 1000 * x8 + 10000 * h;
}

double half(double x) { return x / 2; }

float scale(float x, float by) { return x * by; }

int compare(const char *a, const char *b) { return strcmp(a, b); }

size_t measure(const char *s) { return strlen(s); }

const char *greeting(void) { return "hello there"; }

char initial(const char *s) { return s[0]; }

void bump(int by) { counter += by; }

void remember(const char *text) { last_text = strdup(text); }

/* Sums `n` doubles given as variadic arguments (xmm registers, rax = count). */
double vsum(int n, ...)
{
    va_list ap;
    double total = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        total += va_arg(ap, double);
    va_end(ap);
    return total;
}

int inner(int x) { return x * 2; }

int calls_inner(int x) { return inner(x) + 1; }

int forever(void)
{
    volatile unsigned long spins = 0;
    for (;;)
        spins++;
    return 0;
}

int crash_here(int *p) { return *p; }

int raise_usr1(void) { return raise(SIGUSR1); }

int leave(int code) { exit(code); }

void stop_here(void) {}

static void on_usr1(int sig)
{
    (void)sig;
    usr1_seen++;
}

static int pipe_fds[2];

static void *writer(void *arg)
{
    (void)arg;
    sleep(1);
    if (write(pipe_fds[1], "data", 4) != 4)
        abort();
    return NULL;
}

static int read_mode(void)
{
    pthread_t thread;
    char buf[16] = {0};
    if (pipe(pipe_fds) != 0 || pthread_create(&thread, NULL, writer, NULL) != 0)
        return 4;
    ssize_t n = read(pipe_fds[0], buf, sizeof buf - 1);
    pthread_join(thread, NULL);
    printf("read %zd bytes: %s\n", n, n > 0 ? buf : "");
    if (n < 0)
        return errno == EINTR ? 2 : 3;
    return strcmp(buf, "data") == 0 ? 0 : 3;
}

static int sleep_mode(void)
{
    struct timespec start, end, request = {2, 0};
    clock_gettime(CLOCK_MONOTONIC, &start);
    int rc = nanosleep(&request, NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    long ms = (end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1000000;
    printf("nanosleep returned %d\n", rc);
    return (int)(ms / 100);
}

int main(int argc, char **argv)
{
    int status = 0;
    signal(SIGUSR1, on_usr1);
    if (argc > 1 && strcmp(argv[1], "sleep") == 0) {
        status = sleep_mode();
    } else if (argc > 1 && strcmp(argv[1], "read") == 0) {
        status = read_mode();
    } else {
        stop_here();
        printf("counter=%d text=%s\n", counter, last_text);
    }
    printf("usr1=%d\n", usr1_seen);
    return status;
}
