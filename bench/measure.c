/*
 * measure.c - run one command and report what the whole process tree cost:
 * wall time, user+system CPU of the command and every descendant it reaped,
 * and the peak RSS of the largest process in that tree (Linux wait4
 * semantics).  Avoids a dependency on GNU time and gives millisecond
 * resolution.
 *
 * Usage: measure [-q] OUT.json CMD [ARG]...
 * The command's stdout/stderr are inherited (-q: stdout goes to
 * /dev/null, for a command whose output is not a result line, such as
 * `aurora-mcp discover`); OUT.json gets one line:
 *   {"wall_ms":..,"cpu_ms":..,"tree_rss_kib":..,"status":..}
 * Exit status: the command's (128+signal when killed).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* wait4 is a BSD interface; glibc declares it only with _DEFAULT_SOURCE. */
pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru);

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double tv_ms(struct timeval tv)
{
    return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

int main(int argc, char **argv)
{
    struct rusage ru;
    double t0;
    int status, code;
    pid_t pid, w;
    FILE *f;
    int quiet = argc > 1 && argv[1][0] == '-' && argv[1][1] == 'q' &&
                argv[1][2] == '\0';

    argv += quiet;
    argc -= quiet;
    if (argc < 3) {
        fprintf(stderr, "usage: measure [-q] OUT.json CMD [ARG]...\n");
        return 2;
    }
    t0 = now_ms();
    pid = fork();
    if (pid < 0) {
        perror("measure: fork");
        return 1;
    }
    if (pid == 0) {
        int null = quiet ? open("/dev/null", O_WRONLY) : -1;
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
        execvp(argv[2], argv + 2);
        perror("measure: exec");
        _exit(127);
    }
    do
        w = wait4(pid, &status, 0, &ru);
    while (w < 0 && errno == EINTR);
    if (w < 0) {
        perror("measure: wait4");
        return 1;
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    f = fopen(argv[1], "w");
    if (!f) {
        perror("measure: output");
        return 1;
    }
    fprintf(f, "{\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"tree_rss_kib\":%ld,"
            "\"status\":%d}\n", now_ms() - t0,
            tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime), ru.ru_maxrss, code);
    fclose(f);
    return code;
}
