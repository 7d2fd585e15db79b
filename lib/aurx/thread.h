/*
 * thread.h - the threads the library and its plugins start for their
 * own work.  Signals and their handlers belong to the program that embeds
 * us: a thread of ours starts with every signal blocked, so a process
 * signal (SIGINT, SIGTERM, the embedder's SIGUSR1) is never delivered to
 * it and the embedder's handler never runs on it, whatever mask the
 * thread that started it had.  Compiled into each binary that uses it,
 * never exported.  Thread-safe.
 */
#ifndef AURX_THREAD_H
#define AURX_THREAD_H

#include <pthread.h>

/* pthread_create(t, NULL, fn, arg) with every signal blocked in the new
 * thread (the caller's mask is put back).  0 or pthread_create's error. */
int aur__thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
