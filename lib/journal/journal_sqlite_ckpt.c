/*
 * journal_sqlite_ckpt.c - the SQLite journal's WAL checkpoints, run by a
 * thread of their own instead of inside the writer's COMMIT.
 *
 * SQLite's automatic checkpoint copies the WAL into the database file
 * (reading every frame back, writing it, two fsyncs) in the COMMIT that
 * takes the WAL past 1000 frames: with batches of 1024 events about
 * every fourth batch, some 15% of the writer's time, during which the
 * batch's caller (ext-world-events' writer) waits and the App's events
 * queue up.  Here the same threshold only wakes a thread that runs a
 * PASSIVE checkpoint on a connection of its own, which SQLite lets run
 * beside a writer (it copies the frames committed so far and never
 * waits for a lock).
 *
 * Durability is unchanged: the checkpoint is the same operation with the
 * same synchronous=NORMAL (the WAL synced before the copy, the file
 * after), started at the same WAL size; a process crash loses nothing
 * committed, a power loss at most what it lost before (the commits
 * since the last checkpoint).  SQLite restarts the WAL from its start
 * only at a write after a checkpoint that copied all of it, which one
 * running beside a busy writer never does: so past CKPT_FRAMES_MAX the
 * writer waits for the thread's checkpoint to end and runs the rest
 * itself, as SQLite would have, and the WAL stays bounded (about
 * CKPT_FRAMES_MAX pages, plus a batch).  Without the thread (it could
 * not start, or its connection could not open) the writer checkpoints
 * inline, as SQLite would have.
 *
 * Threads: the hook runs on the writer's thread (under the front's
 * lock); the checkpointer only touches its own connection and ck's
 * fields under ck->mu.  aur__jsqlite_ckpt_stop joins it before the
 * writer's connection closes.
 */
#include "aur_setup.h"

#include <pthread.h>

#include "journal_sqlite.h"
#include "mono.h"
#include "thread.h"

/* WAL frames after which a checkpoint is due: SQLite's own default. */
#define CKPT_FRAMES 1000
/* WAL frames (pages) past which the writer finishes the checkpoint
 * itself, so that the next write restarts the WAL (16 MiB of 4 KiB
 * pages). */
#define CKPT_FRAMES_MAX 4000

struct aur__jsq_ckpt {
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* the thread: due or stop */
    pthread_cond_t idle; /* the writer: busy went false */
    bool due, stop, started, failed; /* failed: no thread, go inline */
    bool busy; /* the thread is checkpointing */
    bool hold; /* the writer checkpoints: the thread must not start */
    pthread_t thread;
    char *path; /* the database file, for the thread's connection */
};

static void *ckpt_main(void *arg)
{
    struct aur__jsq_ckpt *ck = arg;
    sqlite3 *db = NULL;
    struct timespec ts;

    if (sqlite3_open_v2(ck->path, &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                            SQLITE_OPEN_NOFOLLOW,
                        NULL) != SQLITE_OK ||
        sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) !=
            SQLITE_OK) {
        sqlite3_close(db);
        db = NULL;
    }
    pthread_mutex_lock(&ck->mu);
    if (!db)
        ck->failed = true; /* the writer checkpoints inline from now on */
    while (db && !ck->stop) {
        while ((!ck->due || ck->hold) && !ck->stop) {
            aur__mono_deadline(&ts, 1000);
            pthread_cond_timedwait(&ck->cv, &ck->mu, &ts);
        }
        if (ck->stop)
            break;
        ck->due = false;
        ck->busy = true;
        pthread_mutex_unlock(&ck->mu);
        /* a failure (an I/O error) leaves the WAL as it is: the next
         * threshold tries again, and the writer's commits go on */
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                  NULL);
        pthread_mutex_lock(&ck->mu);
        ck->busy = false;
        pthread_cond_broadcast(&ck->idle);
    }
    ck->busy = false;
    pthread_cond_broadcast(&ck->idle);
    pthread_mutex_unlock(&ck->mu);
    sqlite3_close(db);
    return NULL;
}

/* sqlite3_wal_hook: after each commit, with the WAL's size in frames. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    struct aur__jsq_ckpt *ck = arg;
    bool inline_ckpt;

    if (frames < CKPT_FRAMES)
        return SQLITE_OK;
    pthread_mutex_lock(&ck->mu);
    if (!ck->started && !ck->failed) {
        if (aur__thread_start(&ck->thread, ckpt_main, ck) == 0)
            ck->started = true;
        else
            ck->failed = true;
    }
    inline_ckpt = ck->failed || frames >= CKPT_FRAMES_MAX;
    if (inline_ckpt) {
        /* bounded: the thread's checkpoint copies a bounded WAL */
        ck->hold = true;
        while (ck->busy)
            pthread_cond_wait(&ck->idle, &ck->mu);
    } else {
        ck->due = true;
        pthread_cond_signal(&ck->cv);
    }
    pthread_mutex_unlock(&ck->mu);
    if (!inline_ckpt)
        return SQLITE_OK;
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL,
                              NULL);
    pthread_mutex_lock(&ck->mu);
    ck->hold = false;
    pthread_mutex_unlock(&ck->mu);
    return SQLITE_OK;
}

int aur__jsqlite_ckpt_start(struct aur__jsqlite *j)
{
    struct aur__jsq_ckpt *ck = calloc(1, sizeof *ck);
    const char *path = sqlite3_db_filename(j->db, "main");

    if (!ck || !path || !*path || !(ck->path = strdup(path)))
        goto fail;
    if (pthread_mutex_init(&ck->mu, NULL) != 0)
        goto fail;
    if (aur__mono_cond_init(&ck->cv) != 0) {
        pthread_mutex_destroy(&ck->mu);
        goto fail;
    }
    if (pthread_cond_init(&ck->idle, NULL) != 0) {
        pthread_cond_destroy(&ck->cv);
        pthread_mutex_destroy(&ck->mu);
        goto fail;
    }
    /* replaces SQLite's automatic checkpoint (itself a WAL hook) */
    sqlite3_wal_hook(j->db, wal_hook, ck);
    j->ckpt = ck;
    return AUR_OK;
fail:
    if (ck)
        free(ck->path);
    free(ck);
    return AUR_E_NOMEM; /* the automatic checkpoint stays */
}

void aur__jsqlite_ckpt_stop(struct aur__jsqlite *j)
{
    struct aur__jsq_ckpt *ck = j->ckpt;
    bool join;

    if (!ck)
        return;
    sqlite3_wal_hook(j->db, NULL, NULL);
    pthread_mutex_lock(&ck->mu);
    ck->stop = true;
    join = ck->started;
    pthread_cond_signal(&ck->cv);
    pthread_mutex_unlock(&ck->mu);
    /* bounded: a PASSIVE checkpoint never waits for a lock */
    if (join)
        pthread_join(ck->thread, NULL);
    pthread_cond_destroy(&ck->idle);
    pthread_cond_destroy(&ck->cv);
    pthread_mutex_destroy(&ck->mu);
    free(ck->path);
    free(ck);
    j->ckpt = NULL;
}
