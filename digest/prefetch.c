/* SPDX-License-Identifier: MIT
 * prefetch.c -- the one-loop pass's prefetch, chosen by timing (see
 * prefetch.h).
 *
 * A round of timing hands out CAL_SAMPLES slots, in order, to passes large
 * enough to be timed: even slots run with the prefetch, odd ones without, so
 * the two ways alternate over the same moments of the process.  The pass
 * that fills the last slot decides.  Every RECAL_PASSES timed-size passes
 * after that, a new round starts, so that a decision a busy moment got wrong
 * does not last.  Passes that are not timed run the way decided, with the
 * prefetch before the first decision, as the digest did before it timed
 * anything.  The round's state is under a lock that is held for a few
 * instructions and only by passes of CAL_MIN_BYTES or more; a pass that
 * finds it held is not timed rather than wait, so that a process forked
 * while another thread held it (which would hold it for ever there) only
 * stops timing. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "digest/digest.h"
#include "digest/prefetch.h"

#define CAL_SAMPLES   32                /* timed passes a round, half of them each way */
#define CAL_MIN_BYTES ((size_t)4 << 20) /* below, one round's way moved with the moment here */
#define RECAL_PASSES  4096              /* passes of that size between rounds */
#define PAYS          0.03              /* how much faster the prefetch must be, to be kept */

static _Atomic int mode = TP_PREFETCH_AUTO; /* the way decided; AUTO: none yet */
static atomic_flag held = ATOMIC_FLAG_INIT;
static struct {
    bool forced; /* tp_digest_use_prefetch(ON or OFF): no timing */
    bool timing; /* a round is on */
    unsigned round;
    int taken, done;
    uint64_t since;           /* passes since the last decision */
    double rate[CAL_SAMPLES]; /* bytes per second of each slot's pass */
} cal = {false, true, 0, 0, 0, 0, {0}};

static bool try_lock(void)
{
    return !atomic_flag_test_and_set_explicit(&held, memory_order_acquire);
}

/* lock waits for the lock: only a thread that took it in this process, for
 * a few instructions, can be holding it then (see above). */
static void lock(void)
{
    while (!try_lock()) continue;
}

static void unlock(void)
{
    atomic_flag_clear_explicit(&held, memory_order_release);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* prefetch_pays: in the median pair of slots (the even one with the
 * prefetch, the odd one after it without), the pass with the prefetch ran
 * at least PAYS faster.  Each pair's two passes ran a moment apart, so a
 * pair's ratio sees the machine's speed of that moment on both sides.
 * Where the prefetch pays it pays much (the Xeon of digest.c: 0.96 of a
 * read with it, 0.67 without); on the AMD Zen 4 of prefetch.h the first
 * round of a fresh process found the two ways equal (a median of
 * 0.985-1.00) in 5 processes of 8, and where such a round chose the
 * prefetch, the same process later read 0.97 of a read without it and
 * 0.85 with it: a tie goes to no prefetch.  Lock held. */
static bool prefetch_pays(void)
{
    double v[CAL_SAMPLES / 2];
    for (int i = 0; i < CAL_SAMPLES / 2; i++) v[i] = cal.rate[2 * i + 1] / cal.rate[2 * i];
    qsort(v, CAL_SAMPLES / 2, sizeof v[0], by_value);
    return (v[CAL_SAMPLES / 4 - 1] + v[CAL_SAMPLES / 4]) / 2 < 1 - PAYS;
}

tp_pf_run tp_pf_start(size_t nbytes)
{
    tp_pf_run r = {atomic_load(&mode) != TP_PREFETCH_OFF, -1, 0, nbytes, 0};
    if (nbytes < CAL_MIN_BYTES || !try_lock()) return r;
    if (!cal.forced && !cal.timing && ++cal.since >= RECAL_PASSES) {
        cal.timing = true, cal.round++;
        cal.taken = cal.done = 0;
    }
    if (cal.timing && cal.taken < CAL_SAMPLES) {
        r.slot = cal.taken++;
        r.round = cal.round;
        r.prefetch = r.slot % 2 == 0;
    }
    unlock();
    if (r.slot >= 0) r.t0 = now_s();
    return r;
}

void tp_pf_end(const tp_pf_run *r)
{
    double t;
    if (r->slot < 0) return;
    t = now_s() - r->t0;
    lock();
    if (cal.timing && r->round == cal.round) {
        cal.rate[r->slot] = (double)r->bytes / (t > 0 ? t : 1e-9);
        if (++cal.done == CAL_SAMPLES) {
            atomic_store(&mode, prefetch_pays() ? TP_PREFETCH_ON : TP_PREFETCH_OFF);
            cal.timing = false, cal.since = 0;
        }
    }
    unlock();
}

void tp_digest_use_prefetch(tp_prefetch m)
{
    lock();
    cal.forced = m != TP_PREFETCH_AUTO;
    cal.timing = !cal.forced, cal.round++;
    cal.taken = cal.done = 0, cal.since = 0;
    atomic_store(&mode, m);
    unlock();
}

tp_prefetch tp_digest_prefetch(void)
{
    return (tp_prefetch)atomic_load(&mode);
}
