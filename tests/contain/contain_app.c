/*
 * contain_app.c - aur-contain-app, an App that tries to outlive its host.
 *
 *   aur-contain-app --record FILE [--wrapped] [--delay-ms N]
 *                   [--nest-cgroup FILE] -- COMMAND [ARG...]
 *
 * Starts, and records in FILE (one line each: "<pid> <starttime> <label>",
 * appended with one write):
 *   app      itself (it becomes COMMAND: same pid, same start time)
 *   wrapper  with --wrapped, its parent (an `sh -c` wrapper, like npx/uv)
 *   daemon   a classic double-forked daemon: fork, setsid, fork; the
 *            middle process exits, so the daemon is an orphan with its
 *            own session, stdio on /dev/null, SIGTERM and SIGHUP ignored
 *   setsid   a child in a new session that keeps the App's pipes and
 *            ignores SIGTERM and SIGHUP
 *   sh1, sh2 an `sh -c` chain: sh1 runs sh2 runs a sleeper (no exec)
 *   sleeper  the end of that chain, ignoring SIGTERM and SIGHUP
 * then sleeps N ms (a slow start) and execs COMMAND (the MCP server, e.g.
 * aur-fixture-server).  With --nest-cgroup, before that, an App that was
 * given a cgroup of its own ("aurora-mcp-*") makes two cgroups below it,
 * evil/deeper, moves itself into the deeper one and writes its own
 * cgroup's directory to FILE ("-" when it has none): rmdir of the App's
 * cgroup alone then fails.  Every process it leaves sleeps at most
 * LIFETIME_S seconds, a safety net if containment fails.
 *
 * Helpers for the chain (internal):
 *   aur-contain-app --record-parent FILE LABEL   record the parent, exit
 *   aur-contain-app --sleeper FILE LABEL         record self, sleep
 *
 * The start time (field 22 of /proc/<pid>/stat) makes a record name one
 * process: check_contain.c never mistakes a recycled pid for a survivor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIFETIME_S 120

static unsigned long long starttime(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long v = 0;
    ssize_t n;
    int fd, field = 3;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p)
        return 0;
    for (p += 2; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    sscanf(p, "%llu", &v);
    return v;
}

static void record(const char *file, pid_t pid, const char *label)
{
    char line[128];
    int n = snprintf(line, sizeof line, "%d %llu %s\n", (int)pid,
                     starttime(pid), label);
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

    if (fd < 0)
        _exit(90);
    if (write(fd, line, (size_t)n) != n)
        _exit(91);
    close(fd);
}

static void stubborn(void)
{
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
}

static _Noreturn void nap(void)
{
    for (int i = 0; i < LIFETIME_S * 10; i++) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    _exit(0);
}

static void daemonise(const char *file)
{
    pid_t mid = fork();

    if (mid < 0)
        _exit(92);
    if (mid == 0) {
        int null;
        setsid();
        if (fork() != 0)
            _exit(0); /* the middle process: the daemon is orphaned */
        stubborn();
        null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        record(file, getpid(), "daemon");
        nap();
    }
    while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static void new_session(const char *file)
{
    pid_t p = fork();

    if (p < 0)
        _exit(93);
    if (p == 0) {
        setsid();
        stubborn();
        record(file, getpid(), "setsid");
        nap();
    }
}

static void sh_chain(const char *self, const char *file)
{
    static const char script[] =
        "\"$0\" --record-parent \"$1\" sh1; "
        "/bin/sh -c '\"$0\" --record-parent \"$1\" sh2; "
        "\"$0\" --sleeper \"$1\" sleeper; :' \"$0\" \"$1\"; :";
    pid_t p = fork();

    if (p < 0)
        _exit(94);
    if (p == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0); /* the chain must not read the App's stdin */
        execl("/bin/sh", "sh", "-c", script, self, file, (char *)NULL);
        _exit(95);
    }
}

/* The cgroup v2 directory of ours, if it is an App's ("aurora-mcp-*"):
 * the usual mount points only (a test helper). */
static bool own_app_cgroup(char *dir, size_t size)
{
    static const char *const mounts[] = {"/sys/fs/cgroup/unified",
                                         "/sys/fs/cgroup"};
    char line[1024], probe[1200];
    bool found = false;
    FILE *f = fopen("/proc/self/cgroup", "re");

    if (!f)
        return false;
    while (!found && fgets(line, sizeof line, f))
        found = strncmp(line, "0::/", 4) == 0;
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    if (!found || !strstr(line, "/aurora-mcp-"))
        return false;
    for (size_t i = 0; i < sizeof mounts / sizeof *mounts; i++) {
        snprintf(probe, sizeof probe, "%s%s/cgroup.kill", mounts[i],
                 line + 3);
        if (access(probe, W_OK) == 0) {
            snprintf(dir, size, "%s", probe);
            dir[strlen(dir) - strlen("/cgroup.kill")] = '\0';
            return true;
        }
    }
    return false;
}

static void nest_cgroup(const char *out)
{
    char dir[1200], path[1300];
    int fd;

    if (!own_app_cgroup(dir, sizeof dir)) {
        snprintf(dir, sizeof dir, "-");
    } else {
        snprintf(path, sizeof path, "%s/evil", dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/evil/deeper", dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/evil/deeper/cgroup.procs", dir);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            snprintf(dir, sizeof dir, "!cannot join %.1100s", path);
        if (fd >= 0)
            close(fd);
    }
    fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)!write(fd, dir, strlen(dir));
        close(fd);
    }
}

int main(int argc, char **argv)
{
    const char *file = NULL, *nest = NULL;
    bool wrapped = false;
    long delay_ms = 0;
    char self[4096];
    ssize_t n;
    int i;

    if (argc == 4 && strcmp(argv[1], "--record-parent") == 0) {
        record(argv[2], getppid(), argv[3]);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--sleeper") == 0) {
        stubborn();
        record(argv[2], getpid(), argv[3]);
        nap();
    }
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--record") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (strcmp(argv[i], "--wrapped") == 0)
            wrapped = true;
        else if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc)
            delay_ms = atol(argv[++i]);
        else if (strcmp(argv[i], "--nest-cgroup") == 0 && i + 1 < argc)
            nest = argv[++i];
        else {
            fprintf(stderr, "aur-contain-app: bad option %s\n", argv[i]);
            return 2;
        }
    }
    if (!file || i + 1 >= argc) {
        fprintf(stderr, "usage: aur-contain-app --record FILE [--wrapped] "
                        "[--delay-ms N] [--nest-cgroup FILE] -- COMMAND "
                        "[ARG...]\n");
        return 2;
    }
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 3;
    self[n] = '\0';
    record(file, getpid(), "app");
    if (wrapped)
        record(file, getppid(), "wrapper");
    daemonise(file);
    new_session(file);
    sh_chain(self, file);
    if (nest)
        nest_cgroup(nest);
    if (delay_ms > 0) {
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    execv(argv[i + 1], argv + i + 1);
    fprintf(stderr, "aur-contain-app: cannot exec %s\n", argv[i + 1]);
    return 4;
}
