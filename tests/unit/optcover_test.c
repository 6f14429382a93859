/* SPDX-License-Identifier: MIT
 * optcover_test.c -- the daemon's decoding of cover events (obs/optcover.c)
 * and of backward's "scaled" (obs/marks.c), from batches built with the
 * tests' encoder and decoded by the wire decoder: every field of a cover, several
 * covers in seq order, empty arrays, parallel arrays of unequal lengths and
 * bodies the schema would refuse (TP_EPROTO), scaled true, false and absent;
 * and the health check's coverage verdict (checks/health/optcover.c) over
 * covers built by hand: a parameter in no optimizer that starts to receive
 * gradients at a later cover (unfrozen), the same one added to the
 * optimizer, and one left out from the first step. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"
#include "daemon/checks/health/ctx.h"
#include "daemon/obs/obs.h"
#include "tests/unit/batches.h"

/* ---- helpers ---- */

static void key(tp_buf *b, const char *k)
{
    tp_mp_cstr(b, k);
}

static tp_batch decode_ok(tb *t)
{
    tp_batch out;
    char why[256] = "";
    tp_err rc;
    tb_end(t);
    ck_assert(!t->buf.oom);
    rc = tp_batch_decode(t->buf.data, t->buf.len, &out, why, sizeof why);
    ck_assert_msg(rc == TP_OK, "decode: %s (%s)", tp_strerror(rc), why);
    return out;
}

/* file files every event of b into p; returns the first error. */
static tp_err file(tpd_arena *a, tpd_proc *p, const tp_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        tp_err rc = tpd_proc_add_event(a, p, &b->ev[i]);
        if (rc != TP_OK) return rc;
    }
    return TP_OK;
}

static void assert_ref(const tpd_tensor_ref *r, const char *name, int64_t id, int64_t group,
                       const char *shape)
{
    ck_assert_ptr_nonnull(r->name);
    ck_assert_str_eq(r->name, name);
    ck_assert_int_eq(r->id, id);
    ck_assert_int_eq(r->group, group);
    ck_assert_ptr_nonnull(r->shape);
    ck_assert_str_eq(r->shape, shape);
}

static void strs(tp_buf *b, uint32_t n, const char *const *s)
{
    tp_mp_array(b, n);
    for (uint32_t i = 0; i < n; i++) tp_mp_cstr(b, s[i]);
}

static void ints(tp_buf *b, uint32_t n, const int64_t *v)
{
    tp_mp_array(b, n);
    for (uint32_t i = 0; i < n; i++) tp_mp_int(b, v[i]);
}

/* A cover body's parallel arrays, each of its own length. */
typedef struct cover_arrays {
    uint32_t nparams, nids, ngroups, nshapes, ngraded, ngraded_ids, ngraded_shapes;
} cover_arrays;

static const char *const NAMES[] = {"model.0.weight", "model.0.bias", "model.2.weight"};
static const int64_t IDS[] = {140001, 140002, 140003};
static const int64_t GROUPS[] = {0, 0, 1};
static const char *const SHAPES[] = {"16x8", "16", "4x16"};

/* cover_body writes a cover body (optimizer 0, SGD) whose arrays have the
 * lengths of c, from NAMES, IDS, GROUPS and SHAPES. */
static void cover_body(tp_buf *b, const cover_arrays *c)
{
    tp_mp_map(b, 9);
    key(b, "opt"), tp_mp_uint(b, 0);
    key(b, "cls"), tp_mp_cstr(b, "SGD");
    key(b, "params"), strs(b, c->nparams, NAMES);
    key(b, "ids"), ints(b, c->nids, IDS);
    key(b, "groups"), ints(b, c->ngroups, GROUPS);
    key(b, "shapes"), strs(b, c->nshapes, SHAPES);
    key(b, "graded"), strs(b, c->ngraded, NAMES);
    key(b, "graded_ids"), ints(b, c->ngraded_ids, IDS);
    key(b, "graded_shapes"), strs(b, c->ngraded_shapes, SHAPES);
}

/* cover_batch is a batch of one cover event (seq 3, step 2) with c's
 * lengths; it goes through the decoder, so its body is one the schema
 * accepts. */
static tp_err file_cover(const cover_arrays *c, tpd_proc *p, tpd_arena *a)
{
    tb t;
    tp_batch b;
    tp_err rc;
    tb_begin(&t, 1, 2, 3, 0, NULL);
    tp_enc_event_begin(&t.buf, 3, 1003, 2, TP_K_COVER);
    t.n++;
    cover_body(&t.buf, c);
    b = decode_ok(&t);
    ck_assert_int_eq(b.n, 1);
    rc = tpd_proc_add_event(a, p, &b.ev[0]);
    tp_batch_free(&b);
    tb_free(&t);
    return rc;
}

/* ---- cover ---- */

START_TEST(test_cover_every_field)
{
    tpd_arena *a = tpd_arena_create();
    tpd_proc p;
    tp_batch b;
    tb t;
    const tpd_cover *c;
    memset(&p, 0, sizeof p);
    tb_begin(&t, 1, 2, 3, 0, NULL);
    tb_hello(&t, 0, 0);
    tb_cover(&t, 1, 4);
    b = decode_ok(&t);
    ck_assert_int_eq(file(a, &p, &b), TP_OK);
    /* the event's bytes are gone: everything was copied into the arena */
    tp_batch_free(&b);
    tb_free(&t);
    ck_assert_uint_eq(p.ncovers, 1);
    ck_assert_uint_eq(p.nmarks, 0); /* a cover is no mark */
    c = &p.covers[0];
    ck_assert_int_eq(c->seq, 1);
    ck_assert_int_eq(c->step, 4);
    ck_assert_int_eq(c->opt, 1);
    ck_assert_str_eq(c->cls, "Adam");
    ck_assert_uint_eq(c->nparams, 2);
    assert_ref(&c->params[0], "model.0.weight", 101, 0, "16x8");
    assert_ref(&c->params[1], "model.0.bias", 102, 1, "16");
    /* graded: one tensor also in the optimizer (same id), one in none; no group */
    ck_assert_uint_eq(c->ngraded, 2);
    assert_ref(&c->graded[0], "model.0.weight", 101, -1, "16x8");
    assert_ref(&c->graded[1], "<Linear>.weight", 201, -1, "4x16");
    ck_assert_int_eq(c->graded[0].id, c->params[0].id);
    tpd_arena_destroy(a);
}
END_TEST

/* tb_all's cover, among every other kind, through tpd_proc_add_event. */
START_TEST(test_cover_among_every_kind)
{
    tpd_arena *a = tpd_arena_create();
    tpd_proc p;
    tp_batch b;
    tb t;
    memset(&p, 0, sizeof p);
    tb_begin(&t, 1, 2, 3, 0, NULL);
    tb_bye(&t, tb_all(&t, 0), 17, 0);
    b = decode_ok(&t);
    ck_assert_int_eq(file(a, &p, &b), TP_OK);
    ck_assert_uint_eq(p.ncovers, 1);
    ck_assert_str_eq(p.covers[0].cls, "Adam");
    ck_assert_uint_eq(p.covers[0].nparams, 2);
    ck_assert_uint_eq(p.covers[0].ngraded, 2);
    tp_batch_free(&b);
    tb_free(&t);
    tpd_arena_destroy(a);
}
END_TEST

/* Covers are filed in seq order, the array growing past its first
 * capacity; each keeps its own strings. */
START_TEST(test_cover_many_in_order)
{
    tpd_arena *a = tpd_arena_create();
    tpd_proc p;
    tp_batch b;
    tb t;
    memset(&p, 0, sizeof p);
    tb_begin(&t, 1, 2, 3, 0, NULL);
    for (uint64_t i = 0; i < 20; i++) tb_cover(&t, 10 + i, (int64_t)i);
    b = decode_ok(&t);
    ck_assert_int_eq(file(a, &p, &b), TP_OK);
    tp_batch_free(&b);
    tb_free(&t);
    ck_assert_uint_eq(p.ncovers, 20);
    ck_assert_uint_ge(p.covers_cap, 20);
    for (size_t i = 0; i < 20; i++) {
        ck_assert_int_eq(p.covers[i].seq, 10 + i);
        ck_assert_int_eq(p.covers[i].step, (int64_t)i);
        assert_ref(&p.covers[i].params[1], "model.0.bias", 102, 1, "16");
        assert_ref(&p.covers[i].graded[1], "<Linear>.weight", 201, -1, "4x16");
    }
    ck_assert_ptr_ne(p.covers[0].params, p.covers[1].params);
    tpd_arena_destroy(a);
}
END_TEST

/* Three tensors in two groups, graded the same three; and an optimizer
 * with no tensor while nothing holds a gradient (empty arrays). */
START_TEST(test_cover_lengths)
{
    tpd_arena *a = tpd_arena_create();
    tpd_proc p;
    const cover_arrays three = {3, 3, 3, 3, 3, 3, 3}, none = {0, 0, 0, 0, 0, 0, 0},
                       graded_none = {3, 3, 3, 3, 0, 0, 0};
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(file_cover(&three, &p, a), TP_OK);
    ck_assert_int_eq(file_cover(&none, &p, a), TP_OK);
    ck_assert_int_eq(file_cover(&graded_none, &p, a), TP_OK);
    ck_assert_uint_eq(p.ncovers, 3);
    ck_assert_int_eq(p.covers[0].opt, 0);
    ck_assert_str_eq(p.covers[0].cls, "SGD");
    ck_assert_uint_eq(p.covers[0].nparams, 3);
    for (int i = 0; i < 3; i++) {
        assert_ref(&p.covers[0].params[i], NAMES[i], IDS[i], GROUPS[i], SHAPES[i]);
        assert_ref(&p.covers[0].graded[i], NAMES[i], IDS[i], -1, SHAPES[i]);
    }
    ck_assert_uint_eq(p.covers[1].nparams, 0);
    ck_assert_uint_eq(p.covers[1].ngraded, 0);
    ck_assert_uint_eq(p.covers[2].nparams, 3);
    ck_assert_uint_eq(p.covers[2].ngraded, 0);
    tpd_arena_destroy(a);
}
END_TEST

/* Parallel arrays of unequal lengths are valid to the schema (each array
 * has its type) but not to the decoder: TP_EPROTO, nothing filed. */
START_TEST(test_cover_unequal_lengths)
{
    static const struct {
        const char *name;
        cover_arrays c;
    } cases[] = {
        {"2 names, 1 id", {2, 1, 2, 2, 1, 1, 1}},
        {"2 names, 3 ids", {2, 3, 2, 2, 1, 1, 1}},
        {"1 group of 2", {2, 2, 1, 2, 1, 1, 1}},
        {"3 shapes of 2", {2, 2, 2, 3, 1, 1, 1}},
        {"names, no ids", {2, 0, 2, 2, 1, 1, 1}},
        {"graded: 2 names, 1 id", {2, 2, 2, 2, 2, 1, 2}},
        {"graded: 1 shape of 2", {2, 2, 2, 2, 2, 2, 1}},
        {"graded: ids, no names", {2, 2, 2, 2, 0, 1, 0}},
    };
    tpd_arena *a = tpd_arena_create();
    tpd_proc p;
    memset(&p, 0, sizeof p);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_err rc = file_cover(&cases[i].c, &p, a);
        ck_assert_msg(rc == TP_EPROTO, "%s: %s", cases[i].name, tp_strerror(rc));
        ck_assert_msg(p.ncovers == 0, "%s: filed", cases[i].name);
    }
    /* the same process takes a good one afterwards */
    ck_assert_int_eq(file_cover(&(cover_arrays){2, 2, 2, 2, 1, 1, 1}, &p, a), TP_OK);
    ck_assert_uint_eq(p.ncovers, 1);
    tpd_arena_destroy(a);
}
END_TEST

/* A cover event built by hand, body not validated: the decoder refuses
 * what the schema would (TP_EPROTO), never crashes, files nothing. */
typedef void (*body_fn)(tp_buf *b, int fault);

enum { F_IDS_STRS = 1, F_SHAPES_INTS, F_GROUPS_STR, F_GRADED_INTS };

/* hb_typed: a whole body with one value of the wrong type (fault): ids as
 * strings, shapes as integers, groups a string, or graded names as
 * integers (then with no optimizer tensors, one graded parameter). */
static void hb_typed(tp_buf *b, int fault)
{
    uint32_t n = fault == F_GRADED_INTS ? 0 : 1, g = 1 - n;
    tp_mp_map(b, 9);
    key(b, "opt"), tp_mp_uint(b, 0), key(b, "cls"), tp_mp_cstr(b, "SGD");
    key(b, "params"), strs(b, n, NAMES);
    key(b, "ids");
    if (fault == F_IDS_STRS)
        strs(b, 1, NAMES);
    else
        ints(b, n, IDS);
    key(b, "groups");
    if (fault == F_GROUPS_STR)
        tp_mp_cstr(b, "0");
    else
        ints(b, n, GROUPS);
    key(b, "shapes");
    if (fault == F_SHAPES_INTS)
        ints(b, 1, IDS);
    else
        strs(b, n, SHAPES);
    key(b, "graded");
    if (g)
        ints(b, 1, IDS);
    else
        strs(b, 0, NULL);
    key(b, "graded_ids"), ints(b, g, IDS);
    key(b, "graded_shapes"), strs(b, g, SHAPES);
}
static void hb_no_opt(tp_buf *b, int fault)
{
    tp_mp_map(b, 1);
    key(b, "cls"), tp_mp_cstr(b, "SGD");
}
static void hb_no_cls(tp_buf *b, int fault)
{
    tp_mp_map(b, 1);
    key(b, "opt"), tp_mp_uint(b, 0);
}
static void hb_names_only(tp_buf *b, int fault) /* ids, groups, shapes absent: lengths differ */
{
    tp_mp_map(b, 3);
    key(b, "opt"), tp_mp_uint(b, 0), key(b, "cls"), tp_mp_cstr(b, "SGD");
    key(b, "params"), strs(b, 2, NAMES);
}

START_TEST(test_cover_unvalidated_bodies)
{
    static const struct {
        const char *name;
        body_fn fn;
        int fault;
    } cases[] = {
        {"ids strings", hb_typed, F_IDS_STRS},
        {"shapes ints", hb_typed, F_SHAPES_INTS},
        {"groups a string", hb_typed, F_GROUPS_STR},
        {"graded ints", hb_typed, F_GRADED_INTS},
        {"no opt", hb_no_opt, 0},
        {"no cls", hb_no_cls, 0},
        {"names only", hb_names_only, 0},
    };
    tpd_arena *a = tpd_arena_create();
    tpd_proc p;
    memset(&p, 0, sizeof p);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_buf b;
        tp_event e;
        uint8_t *copy;
        tp_err rc;
        tp_buf_init(&b);
        cases[i].fn(&b, cases[i].fault);
        ck_assert(!b.oom);
        /* the schema refuses it too */
        ck_assert_msg(tp_body_validate(TP_K_COVER, b.data, b.len, NULL, 0) == TP_EPROTO,
                      "%s: the schema takes it", cases[i].name);
        copy = malloc(b.len); /* exact size: a read past the end shows under ASan */
        memcpy(copy, b.data, b.len);
        memset(&e, 0, sizeof e);
        e.seq = i;
        e.kind = TP_K_COVER;
        e.body = copy;
        e.body_len = b.len;
        rc = tpd_proc_add_cover(a, &p, &e);
        ck_assert_msg(rc == TP_EPROTO, "%s: %s", cases[i].name, tp_strerror(rc));
        rc = tpd_proc_add_event(a, &p, &e);
        ck_assert_msg(rc == TP_EPROTO, "%s (add_event): %s", cases[i].name, tp_strerror(rc));
        ck_assert_msg(p.ncovers == 0, "%s: filed", cases[i].name);
        free(copy);
        tp_buf_free(&b);
    }
    tpd_arena_destroy(a);
}
END_TEST

/* ---- backward's scaled ---- */

START_TEST(test_backward_scaled)
{
    tpd_arena *a = tpd_arena_create();
    tpd_proc p;
    tp_batch b;
    tb t;
    memset(&p, 0, sizeof p);
    tb_begin(&t, 1, 2, 3, 0, NULL);
    tb_backward_scaled(&t, 0, 0, 1.5, 1, 1);
    tb_backward_scaled(&t, 1, 0, 0.5, 2, 0);
    tb_backward_scaled(&t, 2, 1, 0.25, 1, -1);
    tb_backward(&t, 3, 2, 0.125, 1);
    b = decode_ok(&t);
    ck_assert_int_eq(file(a, &p, &b), TP_OK);
    tp_batch_free(&b);
    tb_free(&t);
    ck_assert_uint_eq(p.nmarks, 4);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(p.marks[i].kind, TP_K_BACKWARD);
        ck_assert_int_eq(p.marks[i].seq, i);
    }
    ck_assert_int_eq(p.marks[0].scaled, 1);
    ck_assert_int_eq(p.marks[1].scaled, 0);
    ck_assert_int_eq(p.marks[2].scaled, -1);
    ck_assert_int_eq(p.marks[3].scaled, -1);
    /* the rest of the mark as before */
    ck_assert_int_eq(p.marks[1].n, 2);
    ck_assert(p.marks[1].has_f && p.marks[1].f == 0.5);
    ck_assert_int_eq(p.marks[0].mean_over, 32);
    ck_assert_int_eq(p.marks[3].mean_over, -1);
    ck_assert_uint_eq(p.ncovers, 0);
    tpd_arena_destroy(a);
}
END_TEST

/* ---- the health check's coverage over later covers ---- */

static tpd_tensor_ref HEAD[] = {{"model.head.weight", "4x8", 1, 0}, {"model.head.bias", "4", 2, 0}};
static tpd_tensor_ref EMB = {"model.emb.weight", "16x8", 3, 1};

/* A process of one optimizer (SGD over the head) stepping 5 times (steps
 * 0-4, pre events at seq 10, 20, ...), its cover events given, and the
 * judging context over it. */
typedef struct hfix {
    tpd_proc p;
    tpd_hrow rows[5];
    tpd_hctx x;
} hfix;

static void hfix_init(hfix *f, tpd_cover *covers, size_t n)
{
    memset(f, 0, sizeof *f);
    f->p.covers = covers;
    f->p.ncovers = f->p.covers_cap = n;
    for (int i = 0; i < 5; i++) {
        f->rows[i].step = i;
        f->rows[i].pre_seq = 10 * (uint64_t)(i + 1);
        f->rows[i].nparams = f->rows[i].ngrads = -1;
    }
    f->x.p = &f->p;
    f->x.rows = f->rows;
    f->x.nrows = 5;
    f->x.a = tpd_arena_create();
    ck_assert_ptr_nonnull(f->x.a);
}

static void hfix_free(hfix *f)
{
    tpd_str_free(&f->x.value);
    tpd_str_free(&f->x.head);
    tpd_why_free(&f->x.why);
    tpd_arena_destroy(f->x.a);
}

static tpd_cover cover_at(uint64_t seq, int64_t step, tpd_tensor_ref *params, uint32_t nparams,
                          tpd_tensor_ref *graded, uint32_t ngraded)
{
    tpd_cover c = {seq, step, 0, "SGD", params, nparams, graded, ngraded};
    return c;
}

static bool why_has(const hfix *f, const char *phrase)
{
    return f->x.why.text.s != NULL && strstr(f->x.why.text.s, phrase) != NULL;
}

/* Frozen at the start, unfrozen at step 3 and never added: the cover the
 * agent sends then (the union of parameters with a gradient grew) fails
 * at step 3, named, saying when it started. */
START_TEST(test_cover_unfrozen_not_added_fails_at_its_step)
{
    tpd_tensor_ref graded[] = {HEAD[0], HEAD[1], EMB};
    tpd_cover covers[2];
    hfix f;
    graded[2].group = -1;
    covers[0] = cover_at(9, 0, HEAD, 2, HEAD, 2);
    covers[1] = cover_at(39, 3, HEAD, 2, graded, 3);
    hfix_init(&f, covers, 2);
    ck_assert(tpd_health_cover(&f.x));
    ck_assert(f.x.found);
    ck_assert_int_eq(f.x.step, 3);
    ck_assert_uint_eq(f.x.row, 3);
    ck_assert_str_eq(f.x.path, "model.emb.weight");
    ck_assert_str_eq(tpd_str_cstr(&f.x.value),
                     "started to receive gradients at step 3; in no optimizer's param groups");
    ck_assert(why_has(&f, "model.emb.weight started to receive gradients at step 3"));
    ck_assert(why_has(&f, "it was never added to an optimizer (add_param_group)"));
    ck_assert(why_has(&f, "in no row's grad_norm"));
    ck_assert(!why_has(&f, "first step"));
    hfix_free(&f);
}
END_TEST

/* The same, added with add_param_group when unfrozen: covered. */
START_TEST(test_cover_unfrozen_added_passes)
{
    tpd_tensor_ref params[] = {HEAD[0], HEAD[1], EMB};
    tpd_tensor_ref graded[] = {HEAD[0], HEAD[1], EMB};
    tpd_cover covers[2];
    hfix f;
    covers[0] = cover_at(9, 0, HEAD, 2, HEAD, 2);
    covers[1] = cover_at(39, 3, params, 3, graded, 3);
    hfix_init(&f, covers, 2);
    ck_assert(!tpd_health_cover(&f.x));
    ck_assert(!f.x.found);
    hfix_free(&f);
}
END_TEST

/* Left out from the first step: judged at the first cover, as before (its
 * explanation unchanged), not again at a later one. */
START_TEST(test_cover_left_out_from_the_first_step)
{
    tpd_tensor_ref graded[] = {HEAD[0], HEAD[1], EMB};
    tpd_cover covers[2];
    hfix f;
    covers[0] = cover_at(9, 0, HEAD, 2, graded, 3);
    covers[1] = cover_at(39, 3, HEAD, 2, graded, 3);
    hfix_init(&f, covers, 2);
    ck_assert(tpd_health_cover(&f.x));
    ck_assert_int_eq(f.x.step, 0);
    ck_assert_str_eq(f.x.path, "model.emb.weight");
    ck_assert_str_eq(tpd_str_cstr(&f.x.value), "held a gradient; in no optimizer's param groups");
    ck_assert(why_has(&f, "model.emb.weight held a gradient at step 0, before optimizer[0]'s "
                          "first step, and is in none of the param groups of the 1 optimizer "
                          "that stepped (2 tensors in all)"));
    ck_assert(!why_has(&f, "started to receive"));
    hfix_free(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("optcover");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_cover_every_field);
    tcase_add_test(tc, test_cover_among_every_kind);
    tcase_add_test(tc, test_cover_many_in_order);
    tcase_add_test(tc, test_cover_lengths);
    tcase_add_test(tc, test_cover_unequal_lengths);
    tcase_add_test(tc, test_cover_unvalidated_bodies);
    tcase_add_test(tc, test_backward_scaled);
    tcase_add_test(tc, test_cover_unfrozen_not_added_fails_at_its_step);
    tcase_add_test(tc, test_cover_unfrozen_added_passes);
    tcase_add_test(tc, test_cover_left_out_from_the_first_step);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
