/* SPDX-License-Identifier: MIT
 * provenance_test.c -- where a restore's content came from: a restore of a
 * loaded checkpoint's content is traced to that load; an object reloading
 * its own state, or an RNG state kept in memory, to none. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/checks/resume/provenance.h"

/* the shape of the tensors built by hand */
static const int64_t FOUR[1] = {4}, FIVE[1] = {5};

static tpd_arena *arena;

static tpd_val tensor(uint8_t tag)
{
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 't';
    v.dtype = "torch.float32";
    v.ndim = 1;
    v.shape = FOUR;
    memset(v.digest, tag, sizeof v.digest);
    return v;
}

static tpd_val integer(int64_t i)
{
    tpd_val v;
    memset(&v, 0, sizeof v);
    v.kind = 'v';
    v.vtype = TP_V_INT;
    v.i = i;
    return v;
}

static void leaf(tpd_items *l, const char *path, tpd_val v)
{
    tpd_item it;
    memset(&it, 0, sizeof it);
    it.path = path;
    it.group = tpd_group_of(path);
    it.v = v;
    ck_assert_int_eq(tpd_items_push(arena, l, &it), TP_OK);
}

/* proc: one load (seq 10) of a file holding a model, an optimizer state and
 * a scheduler, as a training script saves them in one dict. */
static tpd_proc *proc(void)
{
    tpd_proc *p;
    arena = tpd_arena_create();
    p = tpd_arena_alloc(arena, sizeof *p);
    memset(p, 0, sizeof *p);
    p->ckpts = tpd_arena_alloc(arena, sizeof *p->ckpts);
    p->nckpts = 1;
    memset(p->ckpts, 0, sizeof *p->ckpts);
    p->ckpts[0].seq = 10;
    p->ckpts[0].load = true;
    leaf(&p->ckpts[0].manifest, "model.fc.weight", tensor(1));
    leaf(&p->ckpts[0].manifest, "optimizer.state.0.exp_avg", tensor(2));
    leaf(&p->ckpts[0].manifest, "optimizer.param_groups[0].lr", integer(3));
    leaf(&p->ckpts[0].manifest, "scheduler.last_epoch", integer(4));
    leaf(&p->ckpts[0].manifest, "rng", tensor(5));
    return p;
}

static tpd_restore restore(uint64_t seq)
{
    tpd_restore r;
    memset(&r, 0, sizeof r);
    r.seq = seq;
    r.has_manifest = true;
    return r;
}

START_TEST(test_provenance_content_of_a_load_is_traced_to_it)
{
    tpd_proc *p = proc();
    tpd_restore r = restore(11);
    leaf(&r.manifest, "state.0.exp_avg", tensor(2));
    leaf(&r.manifest, "param_groups[0].lr", integer(3));
    ck_assert_ptr_eq(tpd_restore_source(p, &r), &p->ckpts[0]);
    tpd_arena_destroy(arena);
}
END_TEST

START_TEST(test_provenance_own_state_is_not_traced)
{
    tpd_proc *p = proc();
    /* an optimizer reloading its own, empty state (accelerate) */
    tpd_restore r = restore(11);
    leaf(&r.manifest, "param_groups[0].lr", integer(7));
    ck_assert_ptr_null(tpd_restore_source(p, &r));
    /* a scheduler state that is the checkpoint's in name only */
    r = restore(11);
    leaf(&r.manifest, "last_epoch", integer(0));
    ck_assert_ptr_null(tpd_restore_source(p, &r));
    tpd_arena_destroy(arena);
}
END_TEST

START_TEST(test_provenance_rng_kept_in_memory_is_not_traced)
{
    tpd_proc *p = proc();
    tpd_restore r = restore(11);
    leaf(&r.manifest, "", tensor(9)); /* isolate_rng's saved state */
    ck_assert_ptr_null(tpd_restore_source(p, &r));
    r = restore(11);
    leaf(&r.manifest, "", tensor(5)); /* the checkpoint's */
    ck_assert_ptr_eq(tpd_restore_source(p, &r), &p->ckpts[0]);
    tpd_arena_destroy(arena);
}
END_TEST

START_TEST(test_provenance_needs_a_manifest_and_an_earlier_load)
{
    tpd_proc *p = proc();
    tpd_restore r = restore(9); /* before the load */
    leaf(&r.manifest, "", tensor(5));
    ck_assert_ptr_null(tpd_restore_source(p, &r));
    r = restore(11);
    ck_assert_ptr_null(tpd_restore_source(p, &r)); /* put back nothing */
    r.has_manifest = false;
    ck_assert_ptr_null(tpd_restore_source(p, &r));
    tpd_arena_destroy(arena);
}
END_TEST

/* A tensor digested on the device where the file's was digested on the host
 * (or not at all) cannot be told from it by content: under its name, with
 * its dtype and shape, it is taken to be the file's. */
START_TEST(test_provenance_digests_of_other_kinds_are_taken_as_held)
{
    tpd_proc *p = proc();
    tpd_restore r = restore(11);
    tpd_val d = tensor(77);
    snprintf(d.dkind, sizeof d.dkind, "dev1");
    leaf(&r.manifest, "fc.weight", d);
    ck_assert_ptr_eq(tpd_restore_source(p, &r), &p->ckpts[0]);
    /* by content wherever it sits needs comparable digests */
    r = restore(11);
    leaf(&r.manifest, "other.weight", d);
    ck_assert_ptr_null(tpd_restore_source(p, &r));
    /* another shape is another tensor, whatever the digests */
    r = restore(11);
    d.shape = FIVE;
    leaf(&r.manifest, "fc.weight", d);
    ck_assert_ptr_null(tpd_restore_source(p, &r));
    /* a digest of kind none says nothing either */
    r = restore(11);
    d = tensor(1);
    snprintf(d.dkind, sizeof d.dkind, "none");
    leaf(&r.manifest, "fc.weight", d);
    ck_assert_ptr_eq(tpd_restore_source(p, &r), &p->ckpts[0]);
    tpd_arena_destroy(arena);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("provenance");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_provenance_content_of_a_load_is_traced_to_it);
    tcase_add_test(tc, test_provenance_own_state_is_not_traced);
    tcase_add_test(tc, test_provenance_rng_kept_in_memory_is_not_traced);
    tcase_add_test(tc, test_provenance_needs_a_manifest_and_an_earlier_load);
    tcase_add_test(tc, test_provenance_digests_of_other_kinds_are_taken_as_held);
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
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
