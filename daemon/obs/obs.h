/* SPDX-License-Identifier: MIT
 * obs.h -- a run's observations, as verdict engines see them.
 *
 * tpd_obs_load reads a run from the store into plain structs (one arena):
 * its executions, their processes, and for each process a timeline of
 * comparable items sorted by (step, group, order of emission): the
 * start-of-step snapshot leaves (model, optimizer, scheduler, scaler, rng),
 * losses, gradients and updates; plus its DataLoader batches (compared as a
 * stream, checks/resume/stream.h), checkpoint saves and loads, restores, and the snapshots
 * taken at saves and at exit.  Verdict engines are pure functions of these
 * structs, so tests build them by hand. */
#ifndef TP_DAEMON_OBS_OBS_H
#define TP_DAEMON_OBS_OBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/arena.h"
#include "daemon/store/store.h"
#include "proto/event.h"

/* Component groups, in the order that decides "first" within one step. */
typedef enum tpd_group {
    TPD_G_DATA = 0,
    TPD_G_MODEL,
    TPD_G_MODULE, /* module[<name>]: a module no optimizer trains (an EMA, a teacher) */
    TPD_G_OPTIMIZER,
    TPD_G_SCHEDULER,
    TPD_G_SCALER,
    TPD_G_RNG,
    TPD_G_LOSS,
    TPD_G_GRAD,
    TPD_G_UPDATE,
    TPD_G_OTHER,
    TPD_G__COUNT
} tpd_group;

/* tpd_group_of classifies a component path by its first name. */
tpd_group tpd_group_of(const char *path);
/* tpd_group_name is "data", "model", "module", ... */
const char *tpd_group_name(tpd_group g);

/* One observed value. */
typedef struct tpd_val {
    char kind; /* 't' tensor, 'v' value, 'd' digest, 'i' sample ids */
    /* 't': the kind of the digest (TP_DKIND_*); "" in a value built by hand
     * stands for "xxh3" (tpd_val_dkind) */
    char dkind[TP_DKIND_MAX + 1];
    bool blob;
    bool b;
    tp_vtype vtype;
    uint32_t ndim;
    uint8_t digest[TP_DIGEST_LEN];
    const char *dtype;
    const int64_t *shape; /* ndim elements (interned by the loader: tpd_arena_intern) */
    tp_stats stats;
    /* the fields of one kind at a time: a long run holds millions of values
     * (the fields are laid out so that a value is 112 bytes, not 152) */
    union {
        struct { /* 'v' */
            int64_t i;
            double f;
            const char *s;
        };
        struct {
            uint64_t n;         /* 'd': items; 'i': number of ids */
            const int64_t *ids; /* 'i': the n ids */
        };
    };
} tpd_val;

/* tpd_val_dkind is the kind of v's digest: its tensor leaf's, or "xxh3"
 * (every digest of another value, and a tensor's that does not say). */
const char *tpd_val_dkind(const tpd_val *v);
/* tpd_digests_comparable says whether a's and b's digests are functions of
 * the same kind, so that equal digests mean equal contents and unequal ones
 * different contents: neither is of kind "none" and both are of one kind. */
bool tpd_digests_comparable(const tpd_val *a, const tpd_val *b);

/* An item's ord: its event's seq in the high bits, its place among the
 * event's leaves in the low 24. */
#define TPD_ORD(seq)     ((uint64_t)(seq) << 24)
#define TPD_ORD_SEQ(ord) ((uint64_t)(ord) >> 24)

typedef struct tpd_item {
    int64_t step;
    uint64_t ord;
    const char *path;
    tpd_group group;
    /* a hash of path, never 0, set by tpd_items_push (0 in an item built
     * otherwise): items whose hashes differ have different paths */
    uint32_t phash;
    /* an induced component of a save's snapshot, filed in the timeline at
     * a step that has no start-of-step snapshot of its own (after the last
     * step: the end of an induction's interval, when the objects are gone
     * by the exit snapshot); compared only where the other side has it */
    bool anchor;
    tpd_val v;
} tpd_item;

typedef struct tpd_items {
    tpd_item *v;
    size_t n, cap;
    /* a timeline's light steps, ascending: those whose start-of-step
     * snapshot was not full (the induction mode, docs/induction.md), so
     * that the model's tensors and the optimizer's state were not digested
     * there (tpd_induced) */
    int64_t *light;
    size_t nlight, light_cap;
} tpd_items;

/* tpd_induced: it is a component a light step leaves out (the model's
 * parameters and buffers, those of the modules no optimizer trains, the
 * optimizer's state). */
bool tpd_induced(const tpd_item *it);

/* tpd_bookkeeping: it is a scheduler's count of its own step() calls
 * (`scheduler._step_count`, and a nested scheduler's), which a scheduler
 * made again after a load with last_epoch starts anew while its learning
 * rates go on as before.  Training reads it only through the learning rate
 * it helps compute (a warning aside), which is compared at every step, so
 * the loader leaves it out of snapshots and their comparisons (a file's
 * manifest keeps it). */
bool tpd_bookkeeping(const tpd_item *it);
/* tpd_step_count_path: path's last key is `_step_count` (an entry of a
 * saved scheduler state_dict, under whatever key the script saved it). */
bool tpd_step_count_path(const char *path);

/* tpd_same_path says whether a and b have the same path (their hashes
 * first, when both have one). */
bool tpd_same_path(const tpd_item *a, const tpd_item *b);

/* tpd_step_cmp orders int64_t steps, for qsort and bsearch. */
int tpd_step_cmp(const void *a, const void *b);

/* tpd_state_steps lists, sorted, the steps at which l holds a model or
 * optimizer state component (a light step holds none), in a malloc'ed
 * array with room for `room` more; NULL when out of memory. */
int64_t *tpd_state_steps(const tpd_items *l, size_t room, size_t *n);

/* tpd_light says whether step is one of l's light steps. */
bool tpd_light(const tpd_items *l, int64_t step);

/* A checkpoint save or load. */
typedef struct tpd_ckpt {
    uint64_t seq;
    int64_t step;
    bool load;
    const char *api, *target, *name, *via, *error;
    bool has_digest;
    uint8_t digest[TP_DIGEST_LEN];
    bool armed;
    tpd_items manifest;
} tpd_ckpt;

/* The keys of a restore's missing and unexpected lists kept (the first). */
#define TPD_RESTORE_KEYS 8

/* A restore: a load_state_dict, an RNG setter or seed.  manifest is what was
 * restored (empty for a seed, and from agents that did not send it); caller
 * is the function outside the agent that made the call, or NULL.  A
 * load_state_dict that reported missing or unexpected keys (strict=False)
 * has keys, the number of keys it was given (-1: not sent), nmissing and
 * nunexpected, the numbers it reported, and the first of each list in
 * missing and unexpected (NULL past the end). */
typedef struct tpd_restore {
    uint64_t seq;
    int64_t step;
    const char *what, *obj, *op, *caller;
    bool has_load, has_seed, has_manifest;
    int64_t load, seed;
    tpd_items manifest;
    int64_t keys, nmissing, nunexpected;
    const char *missing[TPD_RESTORE_KEYS], *unexpected[TPD_RESTORE_KEYS];
} tpd_restore;

/* One tensor as a cover event names it: its name ("" for a tensor of no
 * live module), its identity in the process, its shape ("16x8"). */
typedef struct tpd_tensor_ref {
    const char *name, *shape;
    int64_t id;
    int64_t group; /* the param group, for an optimizer's tensor; -1 otherwise */
} tpd_tensor_ref;

/* A cover event (filed by optcover.c): optimizer opt's tensors, in group order,
 * and the parameters of the live modules that held a gradient, just before
 * its first step (and when its param groups changed, or a parameter first
 * held a gradient). */
typedef struct tpd_cover {
    uint64_t seq;
    int64_t step, opt;
    const char *cls;
    tpd_tensor_ref *params;
    uint32_t nparams;
    tpd_tensor_ref *graded;
    uint32_t ngraded;
} tpd_cover;

/* A module the state holds that no optimizer trains (snapshot.modules): its
 * components are module[<name>].<param>. */
typedef struct tpd_module {
    const char *name, *cls;
} tpd_module;

/* tpd_proc_module is the module a component path names (module[<name>]...)
 * among p's, or NULL. */
struct tpd_proc;
const tpd_module *tpd_proc_module(const struct tpd_proc *p, const char *path);

/* A snapshot outside the timeline: at a save, at exit, at an interruption. */
typedef struct tpd_snap {
    uint64_t seq;
    int64_t step;
    const char *why;
    tpd_items items;
} tpd_snap;

/* One DataLoader batch as the agent reported it, ids and all; or, with end
 * set, the end of a loader's epoch (no ids; pos = the batches it returned).
 * Filed in emission order (batch.c). */
typedef struct tpd_batch {
    uint64_t seq;
    int64_t step; /* the step during which it was fetched */
    uint32_t loader, epoch, pos;
    bool end, has_ids, has_worker, has_dataset_len, has_total_size, drop_last;
    int64_t worker, rank, world; /* rank -1: unknown */
    int64_t dataset_len, total_size;
    const char *sampler, *id_source; /* NULL when not said */
    uint32_t n;                      /* ids */
    const int64_t *ids;              /* integer IDs, or string IDs' keys (batch.h) */
    const char *const *strs;         /* the string IDs themselves; NULL for integers */
    /* accelerate's BatchSamplerShard, when it deals the batches: shard
     * "batches" or "split" (NULL: none), the size of the batches it deals
     * (0: not said), the processes it deals to, even_batches, drop_last */
    const char *shard;
    int64_t shard_batch, shard_ranks;
    bool shard_even, shard_drop_last;
} tpd_batch;

/* One training call as the agent reported it, in emission order, for the
 * checks that reason about the order of calls (accumulation windows):
 * backward, optimizer step (pre and post), scheduler step, GradScaler call,
 * clipping, zero_grad and DataLoader batch.  Filed by marks.c. */
typedef struct tpd_mark {
    uint64_t seq;
    int64_t step;   /* the optimizer-step index the event belongs to */
    tp_kind kind;   /* TP_K_BACKWARD, _STEP, _SCHED, _AMP, _CLIP, _ZERO_GRAD or _BATCH */
    const char *op; /* step: "pre", "post"; amp: "scale", "unscale", "step",
                     * "update"; clip: "norm", "value"; zero_grad: "optimizer",
                     * "module"; otherwise NULL */
    int64_t n;      /* backward: count; step: optimizer; sched: scheduler;
                     * zero_grad: optimizer (-1: a module's); batch: size (-1
                     * when not said) */
    bool has_f;
    double f; /* backward: loss; step pre: lr of group 0; amp: scale;
               * clip: total norm */
    bool has_max;
    double max;         /* clip: max_norm or clip_value */
    bool flag;          /* step: skipped; amp: found_inf; zero_grad: set_to_none */
    signed char scaled; /* backward: 1 its tensor was GradScaler.scale's output,
                         * 0 it was not, -1 not said (no GradScaler scaled) */
    int64_t mean_over;  /* backward: the elements its mean-reduced loss
                         * averaged over (-1 when not said) */
    /* step only, for the health check (checks/health/): pre: the total
     * gradient norm, every group's learning rate, the parameters and those
     * with a gradient (-1 when not said; the gradients themselves are in
     * the timeline); post: the update's norm and whether any parameter
     * changed, when measured (TRAINPARITY_UPDATE_NORM=1) */
    bool has_gnorm, has_unorm, has_changed, changed;
    bool scaler; /* pre: the step ran through GradScaler.step (via "scaler") */
    double gnorm, unorm;
    uint32_t nlrs;
    const double *lrs;
    int64_t nparams, ngrads;
} tpd_mark;

typedef struct tpd_proc {
    int64_t pid, ppid, rank, world;
    const char *role, *python, *torch;
    const char *host, *spool; /* hello's: its host's name and its spool folder there */
    bool has_bye;
    const char *bye_reason, *bye_exc;
    int64_t sent, dropped, errors, nevents, max_seq;
    const char *first_error; /* "where: message" of the first agent error */
    int64_t steps;           /* optimizer steps completed (the step after the last) */
    bool has_interrupt_at;
    int64_t interrupt_at;
    tpd_items timeline;
    tpd_snap *snaps;
    size_t nsnaps, snaps_cap;
    tpd_mark *marks; /* backward, step, sched, amp, clip, zero_grad, batch: seq order */
    size_t nmarks, marks_cap;
    tpd_ckpt *ckpts;
    size_t nckpts, ckpts_cap;
    tpd_restore *restores;
    size_t nrestores, restores_cap;
    tpd_batch *batches; /* every batch event, in seq order */
    size_t nbatches, batches_cap;
    tpd_cover *covers; /* every cover event, in seq order */
    size_t ncovers, covers_cap;
    tpd_module *modules; /* every untrained module a snapshot named, once each */
    size_t nmodules, modules_cap;
} tpd_proc;

typedef struct tpd_exec {
    int64_t id;
    const char *role;
    const char *argv_json;
    bool finished, has_status, has_signal;
    int64_t status, signal;
    int64_t created_ns, finished_ns; /* CLOCK_REALTIME: exec.create, and the
                                      * exec.finish that closed it (0 while
                                      * !finished) */
    tpd_proc *procs;
    size_t nprocs;
    const struct tpd_run *run; /* the run it belongs to; NULL when built by hand */
} tpd_exec;

typedef struct tpd_run {
    int64_t id;
    const char *check, *name, *params;
    int64_t created_ns; /* the check's start (runs.created_ns) */
    int64_t judged_ns;  /* when tpd_obs_load had read the run (the verdict's
                         * time); 0 when built by hand */
    const char *blobs;  /* the blob store directory, NULL when not known
                         * (tpd_values_locate sets it) */
    tpd_exec *execs;
    size_t nexecs;
    tpd_arena *arena;
} tpd_run;

/* tpd_obs_load reads run from the store db.  On success *out owns everything (free with
 * tpd_obs_free).  Errors: TP_ENOENT (no such run), TP_ENOMEM, TP_EDB,
 * TP_EPROTO (a stored body the schema rejects); why gets a reason. */
tp_err tpd_obs_load(tpd_store *db, int64_t run, tpd_run **out, char *why, size_t whylen);

/* What a load may leave out to hold less: the induced components
 * (tpd_induced) of the full start-of-step snapshots at the steps of drop
 * (ascending), in every process of the run, and the save anchors at those
 * steps; the light steps and everything else stay as a whole load has
 * them.  A compare verdict loads the
 * golden run so, dropping the steps where C is light, at which the lockstep
 * compares no induced component (checks/judge.c). */
typedef struct tpd_obs_keep {
    const int64_t *drop;
    size_t ndrop;
} tpd_obs_keep;

/* tpd_obs_load_keeping is tpd_obs_load leaving out what keep says (NULL:
 * nothing). */
tp_err tpd_obs_load_keeping(tpd_store *db, int64_t run, const tpd_obs_keep *keep, tpd_run **out,
                            char *why, size_t whylen);
/* tpd_obs_free releases r.  NULL is a no-op. */
void tpd_obs_free(tpd_run *r);

/* tpd_obs_exec finds the execution with the given role, or NULL. */
const tpd_exec *tpd_obs_exec(const tpd_run *r, const char *role);
/* tpd_obs_trainer is the process of e whose training the checks follow, or
 * NULL when e has no process: the one the agent interrupted, else one that
 * stepped, the lowest rank first (the same rank in every execution of a
 * multi-rank run), then the most optimizer steps, then the most events. */
const tpd_proc *tpd_obs_trainer(const tpd_exec *e);

/* ---- building observations (the loader, and tests) ---- */

/* tpd_items_push appends a copy of it (strings are not copied), its path's
 * hash set (phash). */
tp_err tpd_items_push(tpd_arena *a, tpd_items *l, const tpd_item *it);
/* tpd_items_sort orders by (step, group, ord). */
void tpd_items_sort(tpd_items *l);
/* tpd_leaf_val converts a decoded leaf into a value, copying its strings. */
tp_err tpd_leaf_val(tpd_arena *a, const tp_leaf *l, tpd_val *v);
/* tpd_leaf_vals sets the values of v that change from step to step from
 * l, as tpd_leaf_val does, and only those: every one of them for l's kind
 * (v of that kind, and of the same dtype and shape for a tensor). */
tp_err tpd_leaf_vals(tpd_arena *a, const tp_leaf *l, tpd_val *v);
/* tpd_leaf_item reads one leaf at r into *it: its path (interned), group
 * and value; step and ord are the caller's.  Errors: TP_EPROTO, TP_ENOMEM. */
tp_err tpd_leaf_item(tpd_arena *a, tp_mpr *r, tpd_item *it);
/* tpd_leaves_add appends the leaves array at r as items of the given step,
 * ordered from ord0. */
tp_err tpd_leaves_add(tpd_arena *a, tpd_items *l, tp_mpr *r, int64_t step, uint64_t ord0);
/* tpd_proc_add_event files one decoded event into p. */
tp_err tpd_proc_add_event(tpd_arena *a, tpd_proc *p, const tp_event *e);
/* tpd_proc_add_batch files a batch event, ids and all, into p->batches.
 * Errors: TP_ENOMEM, TP_EPROTO (a body the schema would reject). */
tp_err tpd_proc_add_batch(tpd_arena *a, tpd_proc *p, const tp_event *e);
/* tpd_proc_add_cover files a cover event into p->covers.  Errors: TP_ENOMEM,
 * TP_EPROTO (a body the schema would reject, or arrays of unequal lengths). */
tp_err tpd_proc_add_cover(tpd_arena *a, tpd_proc *p, const tp_event *e);
/* tpd_proc_add_mark files a backward, step, sched, amp, clip, zero_grad or batch event
 * into p->marks (other kinds are ignored).  Errors: TP_ENOMEM. */
tp_err tpd_proc_add_mark(tpd_arena *a, tpd_proc *p, const tp_event *e);
/* tpd_proc_finish sorts p's timeline; call once after the last event. */
void tpd_proc_finish(tpd_proc *p);

#endif
