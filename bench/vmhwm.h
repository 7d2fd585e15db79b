/*
 * vmhwm.h - a process's peak resident set (VmHWM in /proc/PID/status),
 * for the bench programs (measure.c, raw_floor.c), each a standalone
 * executable; header-only for that reason.
 */
#ifndef BENCH_VMHWM_H
#define BENCH_VMHWM_H

#include <stdio.h>
#include <sys/types.h>

/* KiB, or -1 when the process or the field is gone. */
static long vm_hwm_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

#endif
