/* SPDX-License-Identifier: MIT
 * health_test.c -- the health verdict (daemon/checks/health/verdict.h)
 * from hand-built observations: each failure it can name, at its path and
 * step and with its explanation, next to a twin that does not fail; PASS on
 * a clean run; ERROR when the run cannot be judged. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/health/verdict.h"

/* the shape of the tensors built by hand */
static const int64_t FOUR[1] = {4};

/* ---- building a run by hand ---- */

#define NPROCS 2

typedef struct world {
    tpd_run *run;
    tpd_exec ex;
    tpd_proc pr[NPROCS];
    uint64_t seq[NPROCS]; /* the next mark's seq; 0 is kept for cover events */
} world;

static tpd_arena *arena(world *w)
{
    return w->run->arena;
}

/* blank: a run of check health (params: its JSON) whose one execution,
 * role "health", exited 0 with nprocs processes that said goodbye and lost
 * nothing; with two, they are ranks 0 and 1 of a world of 2. */
static world *blank(const char *params, size_t nprocs)
{
    world *w = calloc(1, sizeof *w);
    tpd_arena *a = tpd_arena_create();
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_nonnull(a);
    w->run = tpd_arena_alloc(a, sizeof *w->run);
    ck_assert_ptr_nonnull(w->run);
    w->run->arena = a;
    w->run->id = 7;
    w->run->check = "health";
    w->run->params = params;
    w->run->execs = &w->ex;
    w->run->nexecs = 1;
    w->ex.id = 1;
    w->ex.role = "health";
    w->ex.finished = w->ex.has_status = true;
    w->ex.procs = w->pr;
    w->ex.nprocs = nprocs;
    for (size_t k = 0; k < nprocs; k++) {
        w->pr[k].pid = 100 + (int64_t)k;
        w->pr[k].rank = nprocs > 1 ? (int64_t)k : -1;
        w->pr[k].world = nprocs > 1 ? (int64_t)nprocs : -1;
        w->pr[k].role = "trainer";
        w->pr[k].has_bye = true;
        w->pr[k].bye_reason = "exit";
        w->pr[k].nevents = w->pr[k].sent = 1000;
        w->seq[k] = 1;
    }
    return w;
}

static void drop(world *w)
{
    tpd_arena_destroy(arena(w));
    free(w);
}

/* mark appends a mark of kind and op at step to process who: no loss,
 * no count said, a backward that says nothing of GradScaler. */
static tpd_mark *mark(world *w, int who, int64_t step, tp_kind kind, const char *op)
{
    tpd_proc *p = &w->pr[who];
    tpd_mark *m = tpd_arena_grow(arena(w), p->marks, &p->marks_cap, p->nmarks + 1, sizeof *m);
    ck_assert_ptr_nonnull(m);
    p->marks = m;
    m = &p->marks[p->nmarks++];
    memset(m, 0, sizeof *m);
    m->seq = w->seq[who]++;
    m->step = step;
    m->kind = kind;
    m->op = op;
    m->scaled = -1;
    m->mean_over = -1;
    m->nparams = m->ngrads = -1;
    return m;
}

static void bwd(world *w, int who, int64_t step, double loss)
{
    tpd_mark *m = mark(w, who, step, TP_K_BACKWARD, NULL);
    m->n = 1;
    m->has_f = true;
    m->f = loss;
}

/* pre: optimizer 0's pre event at step: gradient norm 1, one param group
 * at learning rate lr, 2 parameters both with a gradient. */
static tpd_mark *pre(world *w, int who, int64_t step, double lr)
{
    tpd_mark *m = mark(w, who, step, TP_K_STEP, "pre");
    double *lrs = tpd_arena_alloc(arena(w), sizeof *lrs);
    ck_assert_ptr_nonnull(lrs);
    lrs[0] = lr;
    m->has_f = true;
    m->f = lr;
    m->has_gnorm = true;
    m->gnorm = 1.0;
    m->nlrs = 1;
    m->lrs = lrs;
    m->nparams = m->ngrads = 2;
    return m;
}

/* post: optimizer 0's post event: the update's norm, whether it changed a
 * parameter, skipped by a GradScaler or not. */
static tpd_mark *post(world *w, int who, int64_t step, bool changed, bool skipped)
{
    tpd_mark *m = mark(w, who, step, TP_K_STEP, "post");
    m->has_unorm = m->has_changed = true;
    m->unorm = changed ? 0.01 : 0;
    m->changed = changed;
    m->flag = skipped;
    return m;
}

static tpd_val tensor(uint8_t tag, uint64_t nonfinite)
{
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 't';
    v.dtype = "torch.float32";
    v.ndim = 1;
    v.shape = FOUR;
    memset(v.digest, tag, sizeof v.digest);
    v.stats.sum = v.stats.l2 = tag;
    v.stats.nonfinite = nonfinite;
    return v;
}

static void item(world *w, int who, int64_t step, const char *path, uint64_t ord, tpd_val v)
{
    tpd_item it;
    memset(&it, 0, sizeof it);
    it.step = step;
    it.path = path;
    it.group = tpd_group_of(path);
    it.ord = ord;
    it.v = v;
    ck_assert_int_eq(tpd_items_push(arena(w), &w->pr[who].timeline, &it), TP_OK);
}

/* one_step adds step s to who: the model at its start (digest tag mtag),
 * one backward of loss, optimizer 0's step at lr with its gradient
 * grad.fc.weight (tag gtag), and the post event. */
static void one_step(world *w, int who, int64_t s, double loss, double lr, uint8_t mtag,
                     uint8_t gtag)
{
    tpd_mark *m;
    item(w, who, s, "model.fc.weight", TPD_ORD(w->seq[who]), tensor(mtag, 0));
    bwd(w, who, s, loss);
    m = pre(w, who, s, lr);
    item(w, who, s, "grad.fc.weight", TPD_ORD(m->seq), tensor(gtag, 0));
    post(w, who, s, true, false);
    w->pr[who].steps = s + 1;
}

/* clean: n steps of who, the loss falling, every step moving the model. */
static void clean_steps(world *w, int who, int n)
{
    for (int s = 0; s < n; s++)
        one_step(w, who, s, 2.0 / (s + 1), 0.1, (uint8_t)(10 + s), (uint8_t)(50 + s));
}

/* find: who's mark of kind and op (NULL: any) at step. */
static tpd_mark *find(world *w, int who, int64_t step, tp_kind kind, const char *op)
{
    tpd_proc *p = &w->pr[who];
    for (size_t i = 0; i < p->nmarks; i++)
        if (p->marks[i].step == step && p->marks[i].kind == kind &&
            (op == NULL || (p->marks[i].op && strcmp(p->marks[i].op, op) == 0)))
            return &p->marks[i];
    ck_abort_msg("no mark at step %lld", (long long)step);
    return NULL;
}

/* find_item: who's timeline item of path at step. */
static tpd_item *find_item(world *w, int who, int64_t step, const char *path)
{
    tpd_items *l = &w->pr[who].timeline;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].step == step && strcmp(l->v[i].path, path) == 0) return &l->v[i];
    ck_abort_msg("no %s at step %lld", path, (long long)step);
    return NULL;
}

static tpd_tensor_ref ref(const char *name, int64_t id, int64_t group)
{
    tpd_tensor_ref r = {name, "4", id, group};
    return r;
}

/* cover files a cover event of optimizer opt (class SGD) at step 0 into
 * process 0, before every mark (seq 0), and returns it. */
static tpd_cover *cover(world *w, int64_t opt, const tpd_tensor_ref *params, uint32_t np,
                        const tpd_tensor_ref *graded, uint32_t ng)
{
    tpd_proc *p = &w->pr[0];
    tpd_cover *c = tpd_arena_grow(arena(w), p->covers, &p->covers_cap, p->ncovers + 1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    p->covers = c;
    c = &p->covers[p->ncovers++];
    memset(c, 0, sizeof *c);
    c->seq = 0;
    c->opt = opt;
    c->cls = "SGD";
    c->params = tpd_arena_alloc(arena(w), sizeof *c->params * (np ? np : 1));
    c->graded = tpd_arena_alloc(arena(w), sizeof *c->graded * (ng ? ng : 1));
    ck_assert(c->params && c->graded);
    memcpy(c->params, params, sizeof *params * np);
    memcpy(c->graded, graded, sizeof *graded * ng);
    c->nparams = np;
    c->ngraded = ng;
    return c;
}

/* final adds process 0's snapshot at exit: model.fc.weight with nonfinite
 * non-finite values. */
static void final(world *w, int64_t step, uint64_t nonfinite)
{
    tpd_proc *p = &w->pr[0];
    tpd_snap *s = tpd_arena_alloc(arena(w), sizeof *s);
    tpd_item it;
    ck_assert_ptr_nonnull(s);
    s->seq = w->seq[0]++;
    s->step = step;
    s->why = "final";
    memset(&it, 0, sizeof it);
    it.step = step;
    it.path = "model.fc.weight";
    it.group = TPD_G_MODEL;
    it.v = tensor(99, nonfinite);
    ck_assert_int_eq(tpd_items_push(arena(w), &s->items, &it), TP_OK);
    p->snaps = s;
    p->nsnaps = 1;
}

/* judge runs the verdict and holds its result to what every report keeps:
 * the first line, and the JSON's first divergence the same as the result's
 * path and step (null when there is none). */
static tpd_result judge(world *w)
{
    tpd_result res;
    json_t *j, *fd;
    char head[64];
    for (size_t k = 0; k < w->ex.nprocs; k++) tpd_proc_finish(&w->pr[k]);
    ck_assert_int_eq(tpd_verdict_health(w->run, NULL, &res), TP_OK);
    ck_assert_ptr_nonnull(res.text);
    snprintf(head, sizeof head, "health: %s\n", tpd_outcome_name(res.outcome));
    ck_assert_msg(strncmp(res.text, head, strlen(head)) == 0, "%s", res.text);
    ck_assert_ptr_nonnull(j = json_loads(res.json, 0, NULL));
    ck_assert_str_eq(json_string_value(json_object_get(j, "check")), "health");
    ck_assert_str_eq(json_string_value(json_object_get(j, "outcome")),
                     tpd_outcome_name(res.outcome));
    fd = json_object_get(j, "first_divergence");
    if (res.has_step) {
        ck_assert_str_eq(json_string_value(json_object_get(fd, "path")), res.path);
        ck_assert_int_eq(json_integer_value(json_object_get(fd, "step")), res.step);
    } else {
        ck_assert(json_is_null(fd));
        ck_assert_str_eq(res.path, "");
    }
    json_decref(j);
    return res;
}

/* ck_text: the text report holds s (ck_no_text: it does not); shows it when not. */
#define ck_text(res, s)                                                                            \
    ck_assert_msg(strstr((res).text, (s)) != NULL, "no '%s' in:\n%s", (s), (res).text)
#define ck_no_text(res, s)                                                                         \
    ck_assert_msg(strstr((res).text, (s)) == NULL, "'%s' in:\n%s", (s), (res).text)

static void ck_fail_at(const tpd_result *res, const char *path, int64_t step)
{
    ck_assert_msg(res->outcome == TPD_FAIL, "%s", res->text);
    ck_assert(res->has_step);
    ck_assert_str_eq(res->path, path);
    ck_assert_int_eq(res->step, step);
}

static void ck_pass(const tpd_result *res)
{
    ck_assert_msg(res->outcome == TPD_PASS, "%s", res->text);
    ck_assert(!res->has_step);
}

/* ---- PASS and ERROR ---- */

START_TEST(test_health_clean_run_passes)
{
    world *w = blank(NULL, 1);
    tpd_tensor_ref p[2] = {ref("model.fc.weight", 1, 0), ref("model.fc.bias", 2, 0)};
    tpd_result res;
    clean_steps(w, 0, 4);
    cover(w, 0, p, 2, p, 2);
    final(w, 4, 0);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "  steps          4 optimizer steps of 1 optimizer\n");
    ck_text(res, "optimizer[0] SGD, 2 tensors in 1 group");
    ck_text(res, "1 model tensor checked at exit");
    ck_text(res, "telemetry (4 rows)");
    ck_assert_ptr_nonnull(
        strstr(res.json, "\"reason\":\"every check held over 4 optimizer steps\""));
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_error_when_not_trustworthy_or_no_step)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    /* no step at all: the trust rule's */
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_text(res, "the command ran no optimizer step");
    tpd_result_clear(&res);
    drop(w);

    /* a crash names the exception, whatever the steps */
    w = blank(NULL, 1);
    clean_steps(w, 0, 3);
    w->pr[0].bye_exc = "RuntimeError";
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_text(res, "crashed with an uncaught RuntimeError");
    tpd_result_clear(&res);
    drop(w);

    /* steps said, but no pre event: no telemetry row */
    w = blank(NULL, 1);
    bwd(w, 0, 0, 1.0);
    w->pr[0].steps = 1;
    res = judge(w);
    ck_assert_msg(res.outcome == TPD_ERROR, "%s", res.text);
    ck_text(res, "  the command made no optimizer step\n");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* ---- per step ---- */

START_TEST(test_health_unchanged_step_fails_at_optimizer)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    clean_steps(w, 0, 4);
    find(w, 0, 2, TP_K_STEP, "post")->changed = false;
    res = judge(w);
    ck_fail_at(&res, "optimizer[0]", 2);
    ck_text(res, "not skipped by a GradScaler; no parameter changed");
    ck_text(res, "optimizer[0] stepped at step 2, no GradScaler skipped it, and no parameter "
                 "changed (the agent compared them before and after the step)");
    ck_text(res, "the learning rate of its param group was 0.1\n");
    ck_text(res, "2 of its 2 parameters had a gradient");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: a GradScaler skipped it (1 of 4 steps: at --max-skipped) */
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    find(w, 0, 2, TP_K_STEP, "post")->changed = false;
    find(w, 0, 2, TP_K_STEP, "post")->flag = true;
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "scaler");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_lr_zero_warmup_passes_later_lr_zero_fails)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    clean_steps(w, 0, 4);
    for (int s = 0; s < 2; s++) {
        ((double *)find(w, 0, s, TP_K_STEP, "pre")->lrs)[0] = 0;
        find(w, 0, s, TP_K_STEP, "post")->changed = false;
    }
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "2 steps with learning rate 0 moved nothing before their optimizer's first "
                 "step that moved (not failures)");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: learning rate 0 after a step that moved is no warmup */
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    ((double *)find(w, 0, 2, TP_K_STEP, "pre")->lrs)[0] = 0;
    find(w, 0, 2, TP_K_STEP, "post")->changed = false;
    res = judge(w);
    ck_fail_at(&res, "optimizer[0]", 2);
    ck_text(res, "the learning rate of its param group was 0 at that step");
    tpd_result_clear(&res);
    drop(w);

    /* nor is learning rate 0 throughout: no later step moved */
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    for (int s = 0; s < 4; s++) {
        ((double *)find(w, 0, s, TP_K_STEP, "pre")->lrs)[0] = 0;
        find(w, 0, s, TP_K_STEP, "post")->changed = false;
    }
    res = judge(w);
    ck_fail_at(&res, "optimizer[0]", 0);
    ck_no_text(res, "warmup         ");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_nonfinite_loss_fails_at_loss)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    clean_steps(w, 0, 4);
    find(w, 0, 2, TP_K_BACKWARD, NULL)->f = NAN;
    res = judge(w);
    ck_fail_at(&res, "loss", 2);
    ck_text(res, "    nan (backward call 1 of 1 of the step)\n");
    ck_text(res, "the loss of backward call 1 of step 2 was nan; no GradScaler skipped the step");
    ck_text(res, "the last finite loss before it was at step 1");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: a GradScaler skipped the step (its loss is scaled) */
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    find(w, 0, 2, TP_K_BACKWARD, NULL)->f = INFINITY;
    find(w, 0, 2, TP_K_STEP, "post")->flag = true;
    res = judge(w);
    ck_pass(&res);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_nonfinite_grad_fails_at_its_path)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    clean_steps(w, 0, 4);
    find_item(w, 0, 1, "grad.fc.weight")->v.stats.nonfinite = 3;
    res = judge(w);
    ck_fail_at(&res, "grad.fc.weight", 1);
    ck_text(res, "    3 non-finite values\n");
    ck_text(res, "grad.fc.weight held 3 non-finite values when optimizer[0] stepped at step 1 (1 "
                 "gradient with non-finite values in all)");
    ck_text(res, "the loss of the step was finite (1)");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: the same gradient, skipped by a GradScaler */
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    find_item(w, 0, 1, "grad.fc.weight")->v.stats.nonfinite = 3;
    find(w, 0, 1, TP_K_STEP, "post")->flag = true;
    res = judge(w);
    ck_pass(&res);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_grad_norm_above_bound_fails)
{
    world *w = blank("{\"max_grad_norm\": 100}", 1);
    tpd_result res;
    clean_steps(w, 0, 4);
    find(w, 0, 3, TP_K_STEP, "pre")->gnorm = 150;
    res = judge(w);
    ck_fail_at(&res, "grad_norm", 3);
    ck_text(res, "    150 > 100 (--max-grad-norm)\n");
    ck_text(res, "the gradient L2 norm optimizer[0] stepped with at step 3 was 150, above "
                 "--max-grad-norm 100");
    ck_text(res, "it was 1 at step 2");
    ck_text(res, "gradient norm <= 100 (--max-grad-norm)");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: at the bound is within it; no bound declared, no check */
    w = blank("{\"max_grad_norm\": 100}", 1);
    clean_steps(w, 0, 4);
    find(w, 0, 3, TP_K_STEP, "pre")->gnorm = 100;
    res = judge(w);
    ck_pass(&res);
    tpd_result_clear(&res);
    drop(w);
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    find(w, 0, 3, TP_K_STEP, "pre")->gnorm = 1e9;
    res = judge(w);
    ck_pass(&res);
    ck_no_text(res, "--max-grad-norm");
    tpd_result_clear(&res);
    drop(w);

    /* a norm that is not finite is above any bound */
    w = blank("{\"max_grad_norm\": 100}", 1);
    clean_steps(w, 0, 4);
    find(w, 0, 1, TP_K_STEP, "pre")->gnorm = NAN;
    res = judge(w);
    ck_fail_at(&res, "grad_norm", 1);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* ---- GradScaler (amp.c) ---- */

/* amp_steps: n steps of process 0 through a GradScaler, as torch's
 * recipe does them unless told otherwise: scale(), backward on its
 * output, [unscale_() and clip], GradScaler.step, update().  direct: the
 * optimizer steps directly; noscale: no scale() call; clip_first: a clip
 * before any unscale_(). */
enum { AMP_OK = 0, AMP_DIRECT = 1, AMP_NOSCALE = 2, AMP_CLIP_FIRST = 4, AMP_CLIP = 8 };

static void amp_steps(world *w, int n, int bad_step, unsigned how)
{
    for (int s = 0; s < n; s++) {
        unsigned h = s == bad_step ? how : (how & AMP_CLIP);
        tpd_mark *m;
        item(w, 0, s, "model.fc.weight", TPD_ORD(w->seq[0]), tensor((uint8_t)(10 + s), 0));
        if (!(h & AMP_NOSCALE)) {
            m = mark(w, 0, s, TP_K_AMP, "scale");
            m->has_f = true;
            m->f = 65536;
        }
        bwd(w, 0, s, 65536.0 / (s + 1));
        find(w, 0, s, TP_K_BACKWARD, NULL)->scaled = (h & AMP_NOSCALE) ? -1 : 1;
        if (h & (AMP_CLIP | AMP_CLIP_FIRST)) {
            if (!(h & AMP_CLIP_FIRST)) mark(w, 0, s, TP_K_AMP, "unscale");
            m = mark(w, 0, s, TP_K_CLIP, "norm");
            m->has_f = m->has_max = true;
            m->f = (h & AMP_CLIP_FIRST) ? 65536.0 * 3 : 3;
            m->max = 1.0;
        }
        m = pre(w, 0, s, 0.1);
        m->scaler = !(h & AMP_DIRECT);
        post(w, 0, s, true, false);
        m = mark(w, 0, s + 1, TP_K_AMP, "update");
        m->has_f = true;
        m->f = 65536;
        w->pr[0].steps = s + 1;
    }
}

START_TEST(test_health_amp_recipe_passes)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    amp_steps(w, 4, -1, AMP_CLIP);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "65536"); /* the scale column */
    /* the loss shown is the loss GradScaler scaled, not its output */
    json_t *j = json_loads(res.json, 0, NULL), *row;
    row = json_array_get(json_object_get(j, "telemetry"), 1);
    ck_assert(json_is_true(json_object_get(row, "loss_unscaled")));
    ck_assert(json_real_value(json_object_get(row, "loss")) == 0.5);
    ck_assert(json_real_value(json_object_get(row, "scale")) == 65536);
    json_decref(j);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_amp_direct_step_fails_at_scaler_step)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    amp_steps(w, 4, 1, AMP_DIRECT);
    res = judge(w);
    ck_fail_at(&res, "scaler.step", 1);
    ck_text(res, "optimizer[0].step() called directly after scale()");
    ck_text(res, "a GradScaler scaled the loss (scale 65536) and optimizer[0] then stepped "
                 "directly at step 1, not through GradScaler.step");
    ck_text(res, "no unscale_() came between the scale() and the step");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_amp_no_scale_fails_at_scaler_scale)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    amp_steps(w, 4, 2, AMP_NOSCALE);
    res = judge(w);
    ck_fail_at(&res, "scaler.scale", 2);
    ck_text(res, "GradScaler.step(optimizer[0]) with no scale() before it");
    ck_text(res, "with no GradScaler.scale call since the previous update()");
    tpd_result_clear(&res);
    drop(w);

    /* scale() called, its output not used: a backward on a plain tensor */
    w = blank(NULL, 1);
    amp_steps(w, 4, -1, AMP_OK);
    find(w, 0, 3, TP_K_BACKWARD, NULL)->scaled = 0;
    res = judge(w);
    ck_fail_at(&res, "scaler.scale", 3);
    ck_text(res, "GradScaler.step(optimizer[0]) after a backward call on an unscaled loss");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_amp_clip_before_unscale_fails_at_clip)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    amp_steps(w, 4, 2, AMP_CLIP_FIRST);
    res = judge(w);
    ck_fail_at(&res, "clip", 2);
    ck_text(res, "    clipped at norm 196608, before unscale_()\n");
    ck_text(res, "the norm clipping measured was 196608 against a bound of 1: the norm of the "
                 "scaled gradients");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_amp_skipped_above_max_fails)
{
    const char *params[2] = {NULL, "{\"max_skipped\": 0.5}"};
    for (int k = 0; k < 2; k++) {
        world *w = blank(params[k], 1);
        tpd_result res;
        amp_steps(w, 8, -1, AMP_OK);
        /* the first (the initial scale lowered) is not counted: 3 of 7 */
        int64_t skipped[4] = {0, 3, 4, 5};
        for (int i = 0; i < 4; i++) {
            tpd_mark *m = find(w, 0, skipped[i], TP_K_STEP, "post");
            m->flag = true;
            m->changed = false;
        }
        res = judge(w);
        if (k == 0) {
            ck_fail_at(&res, "scaler.skipped", 3);
            ck_text(res, "    3 of 7 steps skipped (43%), above --max-skipped 0.25\n");
            ck_text(res, "the 1 skipped step at the start (the scaler lowering its initial "
                         "scale) is not counted");
        } else {
            ck_pass(&res);
            ck_text(res, "at most 0.5 of the steps skipped by a GradScaler");
        }
        tpd_result_clear(&res);
        drop(w);
    }
}
END_TEST

/* ---- optimizer coverage (optcover.c) ---- */

START_TEST(test_health_param_in_no_optimizer_fails_at_it)
{
    world *w = blank(NULL, 1);
    tpd_tensor_ref p[1] = {ref("model.fc.weight", 1, 0)};
    tpd_tensor_ref g[2] = {ref("model.fc.weight", 1, 0), ref("model.head.weight", 3, -1)};
    tpd_result res;
    clean_steps(w, 0, 4);
    cover(w, 0, p, 1, g, 2);
    res = judge(w);
    ck_fail_at(&res, "model.head.weight", 0);
    ck_text(res, "    held a gradient; in no optimizer's param groups\n");
    ck_text(res, "model.head.weight held a gradient at step 0, before optimizer[0]'s first step, "
                 "and is in none of the param groups of the 1 optimizer that stepped (1 tensor in "
                 "all)");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: the optimizer holds it */
    w = blank(NULL, 1);
    tpd_tensor_ref both[2] = {ref("model.fc.weight", 1, 0), ref("model.head.weight", 3, 0)};
    clean_steps(w, 0, 4);
    cover(w, 0, both, 2, g, 2);
    res = judge(w);
    ck_pass(&res);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_optimizer_of_another_copy_fails_at_params)
{
    world *w = blank(NULL, 1);
    tpd_tensor_ref p[1] = {ref("", 10, 0)};
    tpd_tensor_ref g[1] = {ref("model.fc.weight", 1, -1)};
    tpd_result res;
    clean_steps(w, 0, 4);
    for (int s = 0; s < 4; s++) find(w, 0, s, TP_K_STEP, "pre")->ngrads = 0;
    cover(w, 0, p, 1, g, 1);
    res = judge(w);
    ck_fail_at(&res, "optimizer[0].params", 0);
    ck_text(res, "    1 tensor, none holding a gradient at its first step\n");
    ck_text(res, "none of them is a parameter of a module still alive");
    ck_text(res, "their shapes equal those of optimizer[0]'s tensors one for one");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: its tensor had a gradient: then the orphan is the finding */
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    cover(w, 0, p, 1, g, 1);
    res = judge(w);
    ck_fail_at(&res, "model.fc.weight", 0);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_param_twice_fails_at_it)
{
    world *w = blank(NULL, 1);
    tpd_tensor_ref p[2] = {ref("model.fc.weight", 1, 0), ref("model.fc.weight", 1, 1)};
    tpd_result res;
    clean_steps(w, 0, 4);
    cover(w, 0, p, 2, p, 1);
    res = judge(w);
    ck_fail_at(&res, "model.fc.weight", 0);
    ck_text(res, "    twice in optimizer[0]'s param groups\n");
    ck_text(res, "model.fc.weight is in optimizer[0]'s param groups twice (group 0, place 0; "
                 "group 1, place 1)");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* unfrozen: 4 steps of process 0 whose optimizer holds p (np tensors);
 * model.emb.weight (id 3) first holds a gradient at step 2, which a second
 * cover event says just before that step's optimizer step. */
static world *unfrozen(const tpd_tensor_ref *p, uint32_t np)
{
    world *w = blank(NULL, 1);
    tpd_tensor_ref g[2] = {ref("model.fc.weight", 1, -1), ref("model.emb.weight", 3, -1)};
    tpd_cover *c;
    cover(w, 0, p, 1, g, 1);
    for (int s = 0; s < 4; s++) {
        if (s == 2) {
            c = cover(w, 0, p, np, g, 2);
            c->seq = w->seq[0]++;
            c->step = 2;
        }
        one_step(w, 0, s, 1.0 / (s + 1), 0.1, (uint8_t)(10 + s), (uint8_t)(50 + s));
    }
    return w;
}

START_TEST(test_health_unfrozen_param_not_added_fails_where_it_started)
{
    tpd_tensor_ref p[2] = {ref("model.fc.weight", 1, 0), ref("model.emb.weight", 3, 1)};
    world *w = unfrozen(p, 1);
    tpd_result res = judge(w);
    ck_fail_at(&res, "model.emb.weight", 2);
    ck_text(res, "    started to receive gradients at step 2; in no optimizer's param groups\n");
    ck_text(res, "it was never added to an optimizer (add_param_group)");
    ck_text(res, "its gradient is in no row's grad_norm");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: add_param_group put it in the optimizer */
    w = unfrozen(p, 2);
    res = judge(w);
    ck_pass(&res);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* two_opts: 2 iterations of process 0, each optimizer 0 then optimizer 1
 * stepping (their own step indices); a backward before optimizer 1's step
 * too when gan.  Optimizer 1 holds tensor shared (id 1 is optimizer 0's). */
static world *two_opts(bool gan, int64_t shared)
{
    world *w = blank(NULL, 1);
    tpd_tensor_ref p0[1] = {ref("model.g.weight", 1, 0)},
                   p1[1] = {ref(shared == 1 ? "model.g.weight" : "model.d.weight", shared, 0)};
    tpd_tensor_ref g[2] = {ref("model.g.weight", 1, -1), ref("model.d.weight", shared, -1)};
    cover(w, 0, p0, 1, g, shared == 1 ? 1 : 2);
    cover(w, 1, p1, 1, g, shared == 1 ? 1 : 2);
    for (int64_t s = 0; s < 4; s++) {
        bool second = s % 2 == 1;
        if (!second || gan) bwd(w, 0, s, 1.0);
        pre(w, 0, s, 0.1)->n = second;
        post(w, 0, s, true, false)->n = second;
        w->pr[0].steps = s + 1;
    }
    return w;
}

START_TEST(test_health_tensor_in_two_optimizers_fails_without_backward_between)
{
    world *w = two_opts(false, 1);
    tpd_result res = judge(w);
    ck_fail_at(&res, "model.g.weight", 1);
    ck_text(res, "    in optimizer[0] and optimizer[1], stepped at steps 0 and 1\n");
    ck_text(res, "model.g.weight is in optimizer[0] (group 0) and in optimizer[1] (group 0)");
    ck_text(res, "with no backward call between: both applied the same gradient to it");
    tpd_result_clear(&res);
    drop(w);

    /* the twins: a backward between (a GAN), or no tensor shared */
    w = two_opts(true, 1);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "4 optimizer steps of 2 optimizers");
    tpd_result_clear(&res);
    drop(w);
    w = two_opts(false, 2);
    res = judge(w);
    ck_pass(&res);
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* ---- ranks (ranks.c) ---- */

START_TEST(test_health_rank_drift_fails_at_the_tensor)
{
    world *w = blank(NULL, 2);
    tpd_result res;
    clean_steps(w, 0, 4);
    clean_steps(w, 1, 4);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "1 other rank compared with rank 0 at every step");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: rank 1 stepped with another gradient at step 2 */
    w = blank(NULL, 2);
    clean_steps(w, 0, 4);
    clean_steps(w, 1, 4);
    find_item(w, 1, 2, "grad.fc.weight")->v = tensor(77, 0);
    res = judge(w);
    ck_fail_at(&res, "grad.fc.weight", 2);
    ck_text(res, "    rank 1's differs from rank 0's\n");
    ck_text(res, "at step 2, the gradient grad.fc.weight of rank 1 differs from rank 0's");
    ck_text(res, "the two ranks' model parameters were identical at their first snapshot "
                 "(step 0)");
    tpd_result_clear(&res);
    drop(w);

    /* or another learning rate */
    w = blank(NULL, 2);
    clean_steps(w, 0, 4);
    clean_steps(w, 1, 4);
    ((double *)find(w, 1, 3, TP_K_STEP, "pre")->lrs)[0] = 0.2;
    res = judge(w);
    ck_fail_at(&res, "optimizer[0].lr", 3);
    ck_text(res, "rank 1's learning rates differ from rank 0's");
    ck_text(res, "at step 3 optimizer[0] of rank 1 stepped with learning rate 0.2 (group 0) "
                 "where rank 0's had 0.1");
    tpd_result_clear(&res);
    drop(w);

    /* ranks whose first parameters differ are not replicas: not compared */
    w = blank(NULL, 2);
    clean_steps(w, 0, 4);
    clean_steps(w, 1, 4);
    find_item(w, 1, 0, "model.fc.weight")->v = tensor(88, 0);
    find_item(w, 1, 2, "grad.fc.weight")->v = tensor(77, 0);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "1 other rank not compared: its first parameters differ from rank 0's");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* ---- over the run ---- */

START_TEST(test_health_nonfinite_final_parameter_fails)
{
    world *w = blank(NULL, 1);
    tpd_result res;
    clean_steps(w, 0, 4);
    final(w, 4, 2);
    res = judge(w);
    ck_fail_at(&res, "model.fc.weight", 4);
    ck_text(res, "    2 non-finite values\n");
    ck_text(res, "model.fc.weight held 2 non-finite values in the final snapshot (at exit, after "
                 "4 optimizer steps)");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: no snapshot at exit, nothing checked, as the report says */
    w = blank(NULL, 1);
    clean_steps(w, 0, 4);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "final state    not checked: no snapshot was taken at exit");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

/* losses: n steps whose loss goes from first to last in a straight line. */
static world *losses(const char *params, int n, double first, double last)
{
    world *w = blank(params, 1);
    for (int s = 0; s < n; s++)
        one_step(w, 0, s, first + (last - first) * s / (n - 1), 0.1, (uint8_t)(10 + s),
                 (uint8_t)(50 + s));
    return w;
}

START_TEST(test_health_min_loss_decrease)
{
    const char *p = "{\"min_loss_decrease\": 0.1}";
    world *w = losses(p, 8, 1.0, 0.99);
    tpd_result res = judge(w);
    /* quarters of 2: 0.99857 and 0.99143; found at the last quarter's first */
    ck_fail_at(&res, "loss_decrease", 6);
    ck_text(res, "< 0.1 (--min-loss-decrease)");
    ck_text(res, "below --min-loss-decrease 0.1");
    tpd_result_clear(&res);
    drop(w);

    w = losses(p, 8, 1.0, 0.5);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "  loss decrease  mean loss");
    tpd_result_clear(&res);
    drop(w);

    /* too few steps to judge: said, not failed */
    w = losses(p, 7, 1.0, 1.0);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "not checked: 7 steps with a finite loss, --min-loss-decrease needs 8");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_lr_expect)
{
    world *w =
        blank("{\"lr_expect\": [[2, [0.05]], [1, [0.1]]], \"lr_expect_file\": \"s.lrs\"}", 1);
    tpd_result res;
    clean_steps(w, 0, 4);
    res = judge(w);
    ck_fail_at(&res, "lr", 2);
    ck_text(res, "    lr 0.1; declared 0.05 (--lr-expect)\n");
    ck_text(res, "optimizer[0] stepped at step 2 with learning rate 0.1; s.lrs declares 0.05");
    ck_text(res, "the declared steps before it matched, the last at step 1");
    tpd_result_clear(&res);
    drop(w);

    /* a declared step the run never made */
    w = blank("{\"lr_expect\": [[1, [0.1]], [9, [0.1]]]}", 1);
    clean_steps(w, 0, 4);
    res = judge(w);
    ck_fail_at(&res, "lr", 9);
    ck_text(res, "declared step 9 not made (--lr-expect)");
    ck_text(res, "the --lr-expect file declares learning rates for step 9");
    tpd_result_clear(&res);
    drop(w);

    /* within the relative tolerance */
    w = blank("{\"lr_expect\": [[3, [0.10000001]]]}", 1);
    clean_steps(w, 0, 4);
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "learning rates of 1 declared step (--lr-expect");
    tpd_result_clear(&res);
    drop(w);

    /* a step declared twice declares nothing */
    w = blank("{\"lr_expect\": [[1, [0.5]], [1, [0.5]]]}", 1);
    clean_steps(w, 0, 4);
    res = judge(w);
    ck_pass(&res);
    ck_no_text(res, "--lr-expect");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

START_TEST(test_health_every_judges_unmeasured_steps_by_snapshots)
{
    world *w = blank("{\"every\": 2}", 1);
    tpd_tensor_ref p[1] = {ref("model.fc.weight", 1, 0)};
    tpd_result res;
    clean_steps(w, 0, 4);
    cover(w, 0, p, 1, p, 1);
    /* the odd steps were not measured */
    for (int s = 1; s < 4; s += 2) find(w, 0, s, TP_K_STEP, "post")->has_changed = false;
    /* step 1 left the model as it was: step 2 starts from step 1's */
    find_item(w, 0, 2, "model.fc.weight")->v = tensor(11, 0);
    final(w, 4, 0);
    item(w, 0, 4, "model.fc.weight", TPD_ORD(w->seq[0]), tensor(20, 0));
    res = judge(w);
    ck_fail_at(&res, "optimizer[0]", 1);
    ck_text(res, "none of its parameters changed (their digests in the snapshots of steps 1 and "
                 "2 are equal)");
    ck_text(res, "update norms   measured at the steps that are multiples of 2 (--every 2)");
    tpd_result_clear(&res);
    drop(w);

    /* the twin: every snapshot differs: the unmeasured steps moved */
    w = blank("{\"every\": 2}", 1);
    clean_steps(w, 0, 4);
    cover(w, 0, p, 1, p, 1);
    for (int s = 1; s < 4; s += 2) find(w, 0, s, TP_K_STEP, "post")->has_changed = false;
    item(w, 0, 4, "model.fc.weight", TPD_ORD(w->seq[0]), tensor(20, 0));
    res = judge(w);
    ck_pass(&res);
    ck_text(res, "telemetry (2 of 4 rows: the steps that are multiples of 2)");
    tpd_result_clear(&res);
    drop(w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("health");
    TCase *t = tcase_create("health");
    tcase_add_test(t, test_health_clean_run_passes);
    tcase_add_test(t, test_health_error_when_not_trustworthy_or_no_step);
    tcase_add_test(t, test_health_unchanged_step_fails_at_optimizer);
    tcase_add_test(t, test_health_lr_zero_warmup_passes_later_lr_zero_fails);
    tcase_add_test(t, test_health_nonfinite_loss_fails_at_loss);
    tcase_add_test(t, test_health_nonfinite_grad_fails_at_its_path);
    tcase_add_test(t, test_health_grad_norm_above_bound_fails);
    tcase_add_test(t, test_health_amp_recipe_passes);
    tcase_add_test(t, test_health_amp_direct_step_fails_at_scaler_step);
    tcase_add_test(t, test_health_amp_no_scale_fails_at_scaler_scale);
    tcase_add_test(t, test_health_amp_clip_before_unscale_fails_at_clip);
    tcase_add_test(t, test_health_amp_skipped_above_max_fails);
    tcase_add_test(t, test_health_param_in_no_optimizer_fails_at_it);
    tcase_add_test(t, test_health_optimizer_of_another_copy_fails_at_params);
    tcase_add_test(t, test_health_param_twice_fails_at_it);
    tcase_add_test(t, test_health_unfrozen_param_not_added_fails_where_it_started);
    tcase_add_test(t, test_health_tensor_in_two_optimizers_fails_without_backward_between);
    tcase_add_test(t, test_health_rank_drift_fails_at_the_tensor);
    tcase_add_test(t, test_health_nonfinite_final_parameter_fails);
    tcase_add_test(t, test_health_min_loss_decrease);
    tcase_add_test(t, test_health_lr_expect);
    tcase_add_test(t, test_health_every_judges_unmeasured_steps_by_snapshots);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
