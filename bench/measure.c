/*
 * measure.c - run one command and report what it cost: the wall time,
 * the user+system CPU of its whole process tree and the peak RSS of the
 * largest process in that tree (wait4), without depending on GNU time.
 * It also reports "self_rss_kib": VmHWM of the
 * command's own process, so a whole-process client (`aurora-mcp discover`,
 * the raw floor) can be compared with another by its own footprint, not by
 * its biggest server.  VmHWM is read at the command's exit, while its
 * memory still exists: the child asks to be traced (PTRACE_TRACEME) and
 * the only options set are PTRACE_O_TRACEEXIT (and TRACEEXEC, so a
 * wrapper's exec is followed, the peak then being the last program's), so the command runs untouched
 * except that signals sent to its main thread pass through this process
 * (re-injected at once).  Its children are not traced.  Where ptrace is
 * not allowed, self_rss_kib is -1.
 *
 * Usage: measure [-q] OUT.json CMD [ARG]...  (-q: the command's stdout
 * goes to /dev/null, for one whose output is not a result line)
 * OUT.json gets one line:
 *   {"wall_ms":..,"cpu_ms":..,"tree_rss_kib":..,"self_rss_kib":..,
 *    "status":..}
 * Exit status: the command's (128+signal when killed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmhwm.h"

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
    int status, code, traced = 0;
    long self = -1;
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
        /* Refused (seccomp, yama): run untraced; self_rss_kib stays -1. */
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        execvp(argv[2], argv + 2);
        perror("measure: exec");
        _exit(127);
    }
    for (;;) {
        long k;

        do
            w = wait4(pid, &status, 0, &ru);
        while (w < 0 && errno == EINTR);
        if (w < 0) {
            perror("measure: wait4");
            return 1;
        }
        if (!WIFSTOPPED(status))
            break;
        /* A new program (a wrapper script's exec) starts a new peak. */
        if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
            self = -1;
        /* Any stop: the process still has its memory. */
        k = vm_hwm_kib(pid);
        if (k > self)
            self = k;
        if (!traced && WSTOPSIG(status) == SIGTRAP) {
            /* The stop after execve: from now on only its exit stops it. */
            traced = 1;
            ptrace(PTRACE_SETOPTIONS, pid, NULL,
                   (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC |
                            PTRACE_O_EXITKILL));
            ptrace(PTRACE_CONT, pid, NULL, NULL);
        } else if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8)) ||
                   status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
            ptrace(PTRACE_CONT, pid, NULL, NULL);
        } else {
            /* A signal on its way to the command: deliver it. */
            ptrace(PTRACE_CONT, pid, NULL,
                   (void *)(long)WSTOPSIG(status));
        }
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    f = fopen(argv[1], "w");
    if (!f) {
        perror("measure: output");
        return 1;
    }
    fprintf(f, "{\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"tree_rss_kib\":%ld,"
            "\"self_rss_kib\":%ld,\"status\":%d}\n", now_ms() - t0,
            tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime), ru.ru_maxrss, self,
            code);
    fclose(f);
    return code;
}
