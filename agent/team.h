/* SPDX-License-Identifier: MIT
 * team.h -- running the agent's hashing on the process's compute threads.
 *
 * torch computes on an OpenMP team (libgomp in the pip wheels and in
 * Debian's build).  When a hook runs, the training thread is inside the
 * agent and that team has nothing to do, but its threads go on spinning for
 * a while after torch's last parallel region: threads of the agent's own
 * would fight them for the cores and lose about half the time.  So the agent
 * borrows the team, through the OpenMP runtime's own entry point
 * (GOMP_parallel, which libgomp, LLVM's and Intel's runtimes all provide),
 * resolved in the process at run time and never linked.  A process with no
 * OpenMP runtime runs the work on the calling thread. */
#ifndef TP_AGENT_TEAM_H
#define TP_AGENT_TEAM_H

/* tpa_team_size is how many threads a run may use: 1 without an OpenMP
 * runtime in the process, else TRAINPARITY_HASH_THREADS when set (1: the
 * calling thread only), else what the runtime would give a parallel region
 * started on this thread (torch.set_num_threads sets that).  Thread-safe. */
int tpa_team_size(void);

/* tpa_team_run calls fn(arg) once on each of up to nthreads threads, the
 * calling thread among them, and returns when all calls have returned.  fn
 * shares out the work itself (it may run on one thread only) and must not
 * call Python: the caller has released the GIL.  Never call it from a forked
 * child (the team's threads are the parent's). */
void tpa_team_run(void (*fn)(void *), void *arg, int nthreads);

/* tpa_team_each calls fn(arg, i) once for each i from 0 to n - 1, on up to
 * nthreads threads as tpa_team_run does (the same rules for fn), each i
 * taken in turn from one shared counter: a thread that ends a short task
 * takes the next, so tasks sorted largest first share out evenly. */
void tpa_team_each(void (*fn)(void *, size_t), void *arg, size_t n, int nthreads);

#endif
