/* SPDX-License-Identifier: MIT
 * leafmemo_test.c -- leaf lists read with the loader's memory of the last
 * step's (daemon/obs/leafmemo.h) give the items a full read gives, step
 * after step, whatever changes between steps: a value, a path, a dtype, a
 * shape, a device, a digest's kind, a leaf's kind, the list's length; and,
 * asked to leave out the induced components or the schedulers'
 * bookkeeping, the others alone. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/obs/leafmemo.h"
#include "daemon/obs/obs.h"

static uint64_t rnd_state;
static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rnd_state >> 33) % n;
}

/* One leaf as the generator describes it. */
typedef struct gleaf {
    char kind;
    char path[48];
    int dtype, ndim, dev, dkind, blob;
    int64_t shape[2];
    int vtype; /* 'v': 0 nil, 1 bool, 2 int, 3 float, 4 str */
    int64_t val;
} gleaf;

static const char *const DTYPES[] = {"torch.float32", "torch.bfloat16"};
static const char *const DEVS[] = {"cpu", "cuda:0"};
static const char *const DKINDS[] = {NULL, "xxh3", "dev1", "none"};

static void fresh(gleaf *g, int k)
{
    memset(g, 0, sizeof *g);
    static const char *const PREFIX[] = {
        "model", "optimizer.state", "module[ema]", "optimizer.group[0]", "scheduler", "grad"};
    unsigned pick = rnd(7);
    g->kind = "tvd"[rnd(3)];
    if (pick == 6) /* a scheduler's count of its steps (tpd_bookkeeping) */
        snprintf(g->path, sizeof g->path, "scheduler.l%d._step_count", k);
    else
        snprintf(g->path, sizeof g->path, "%s.l%d.w%u", PREFIX[pick], k, rnd(3));
    g->dtype = (int)rnd(2);
    g->ndim = (int)rnd(3);
    g->shape[0] = rnd(5);
    g->shape[1] = rnd(5);
    g->dev = (int)rnd(2);
    g->dkind = (int)rnd(4);
    g->blob = (int)rnd(2);
    g->vtype = (int)rnd(5);
    g->val = rnd(1000);
}

/* mutate changes one thing of g now and then, its values every time. */
static void mutate(gleaf *g, int k)
{
    switch (rnd(24)) {
    case 0:
        fresh(g, k);
        break;
    case 1:
        g->path[strlen(g->path) - 1] = (char)('0' + rnd(3));
        break;
    case 2:
        g->dtype ^= 1;
        break;
    case 3:
        g->shape[rnd(2)] = rnd(5);
        break;
    case 4:
        g->ndim = (int)rnd(3);
        break;
    case 5:
        g->dev ^= 1;
        break;
    case 6:
        g->dkind = (int)rnd(4);
        break;
    case 7:
        g->blob ^= 1;
        break;
    case 8:
        g->vtype = (int)rnd(5);
        break;
    default:
        break;
    }
    g->val = rnd(1000);
}

static void encode(tp_buf *b, const gleaf *g)
{
    uint8_t d[16];
    tp_stats st = {(double)g->val, (double)g->val / 2, 1.0, (uint64_t)(g->val % 3)};
    memset(d, (int)(g->val & 0xff), sizeof d);
    d[0] = (uint8_t)(g->val >> 8);
    if (g->kind == 't') {
        tp_enc_leaf_tensor_kind(b, g->path, strlen(g->path), DTYPES[g->dtype], g->shape,
                                (uint32_t)g->ndim, d, &st, DEVS[g->dev], g->blob != 0,
                                DKINDS[g->dkind]);
    } else if (g->kind == 'd') {
        tp_enc_leaf_digest(b, g->path, strlen(g->path), d, (uint64_t)g->val);
    } else {
        tp_enc_leaf_value_begin(b, g->path, strlen(g->path));
        switch (g->vtype) {
        case 0:
            tp_mp_nil(b);
            break;
        case 1:
            tp_mp_bool(b, g->val & 1);
            break;
        case 2:
            tp_mp_int(b, g->val - 500);
            break;
        case 3:
            tp_mp_f64(b, (double)g->val / 7);
            break;
        default: {
            char s[24];
            snprintf(s, sizeof s, "s%lld", (long long)g->val);
            tp_mp_cstr(b, s);
        }
        }
    }
}

static void same_item(const tpd_item *x, const tpd_item *y)
{
    ck_assert_int_eq(x->step, y->step);
    ck_assert_uint_eq(x->ord, y->ord);
    ck_assert_str_eq(x->path, y->path);
    ck_assert_int_eq(x->group, y->group);
    ck_assert_uint_eq(x->phash, y->phash);
    ck_assert_int_eq(x->v.kind, y->v.kind);
    ck_assert(memcmp(x->v.digest, y->v.digest, sizeof x->v.digest) == 0);
    if (x->v.kind == 't') {
        ck_assert_str_eq(x->v.dtype, y->v.dtype);
        ck_assert_uint_eq(x->v.ndim, y->v.ndim);
        ck_assert(memcmp(x->v.shape, y->v.shape, sizeof(int64_t) * x->v.ndim) == 0);
        ck_assert_str_eq(x->v.dkind, y->v.dkind);
        ck_assert_int_eq(x->v.blob, y->v.blob);
        ck_assert(memcmp(&x->v.stats, &y->v.stats, sizeof x->v.stats) == 0);
    } else if (x->v.kind == 'd') {
        ck_assert_uint_eq(x->v.n, y->v.n);
    } else {
        ck_assert_int_eq(x->v.vtype, y->v.vtype);
        ck_assert_int_eq(x->v.b, y->v.b);
        ck_assert_int_eq(x->v.i, y->v.i);
        ck_assert(memcmp(&x->v.f, &y->v.f, sizeof x->v.f) == 0);
        ck_assert_int_eq(x->v.s != NULL, y->v.s != NULL);
        if (x->v.s) ck_assert_str_eq(x->v.s, y->v.s);
    }
}

START_TEST(test_leafmemo_as_full_read)
{
    size_t books = 0; /* bookkeeping leaves read past, over all rounds */
    rnd_state = 2026;
    for (int round = 0; round < 60; round++) {
        tpd_arena *a = tpd_arena_create(), *b = tpd_arena_create(), *c = tpd_arena_create();
        tpd_items full, memo, kept;
        tpd_leafmemo m = {NULL, 0}, mk = {NULL, 0};
        gleaf g[12];
        int n = 1 + (int)rnd(12);
        memset(&full, 0, sizeof full);
        memset(&memo, 0, sizeof memo);
        memset(&kept, 0, sizeof kept);
        for (int k = 0; k < 12; k++) fresh(&g[k], k);
        for (int step = 0; step < 40; step++) {
            tp_buf buf;
            tp_mpr r1, r2, r3;
            size_t before = memo.n, j = kept.n;
            /* the induced components dropped at some steps only */
            bool drop = rnd(3) != 0;
            if (rnd(10) == 0) n = 1 + (int)rnd(12); /* the list grows or shrinks */
            tp_buf_init(&buf);
            tp_mp_array(&buf, (uint32_t)n);
            for (int k = 0; k < n; k++) {
                mutate(&g[k], k);
                encode(&buf, &g[k]);
            }
            ck_assert(!buf.oom);
            tp_mpr_init(&r1, buf.data, buf.len);
            tp_mpr_init(&r2, buf.data, buf.len);
            tp_mpr_init(&r3, buf.data, buf.len);
            ck_assert_int_eq(tpd_leaves_add(a, &full, &r1, step, TPD_ORD(step)), TP_OK);
            ck_assert_int_eq(tpd_leaves_add_memo(b, &memo, &r2, step, TPD_ORD(step), &m, 0), TP_OK);
            ck_assert_int_eq(
                tpd_leaves_add_memo(c, &kept, &r3, step, TPD_ORD(step), &mk,
                                    TPD_LEAVE_BOOKKEEPING | (drop ? TPD_LEAVE_INDUCED : 0u)),
                TP_OK);
            ck_assert_ptr_eq(r1.p, r2.p);
            ck_assert_ptr_eq(r1.p, r3.p);
            ck_assert_uint_eq(full.n, memo.n);
            for (size_t i = before; i < memo.n; i++) same_item(&full.v[i], &memo.v[i]);
            /* kept: this step's items of the full read, in order, without the
             * bookkeeping, nor the induced ones when drop */
            for (size_t i = before; i < full.n; i++) {
                if (tpd_bookkeeping(&full.v[i])) {
                    books++;
                    continue;
                }
                if (drop && tpd_induced(&full.v[i])) continue;
                ck_assert_uint_lt(j, kept.n);
                same_item(&full.v[i], &kept.v[j++]);
            }
            ck_assert_uint_eq(kept.n, j);
            /* every place read is remembered, for the next step */
            for (int k = 0; k < n; k++) ck_assert_ptr_nonnull(m.v[k].bytes);
            tp_buf_free(&buf);
        }
        tpd_leafmemo_free(&m);
        tpd_leafmemo_free(&mk);
        tpd_arena_destroy(a);
        tpd_arena_destroy(b);
        tpd_arena_destroy(c);
    }
    ck_assert_uint_gt(books, 0);
}
END_TEST

/* A leaf list the memory cannot read: refused as a full read refuses it. */
START_TEST(test_leafmemo_refuses_as_full_read)
{
    tpd_arena *a = tpd_arena_create();
    tpd_items l;
    tpd_leafmemo m = {NULL, 0};
    tp_buf buf;
    tp_mpr r;
    gleaf g;
    rnd_state = 1;
    memset(&l, 0, sizeof l);
    fresh(&g, 0);
    g.kind = 't';
    tp_buf_init(&buf);
    tp_mp_array(&buf, 1);
    encode(&buf, &g);
    tp_mpr_init(&r, buf.data, buf.len);
    ck_assert_int_eq(tpd_leaves_add_memo(a, &l, &r, 0, 0, &m, 0), TP_OK);
    /* the same head, then a string where the digest goes */
    {
        tp_buf bad;
        size_t head = m.v[0].head_len;
        tp_buf_init(&bad);
        tp_mp_array(&bad, 1);
        tp_buf_append(&bad, buf.data + 1, head);
        tp_mp_cstr(&bad, "not a digest");
        tp_mpr_init(&r, bad.data, bad.len);
        ck_assert_int_eq(tpd_leaves_add_memo(a, &l, &r, 1, 0, &m, 0), TP_EPROTO);
        tp_mpr_init(&r, bad.data, bad.len);
        ck_assert_int_eq(tpd_leaves_add(a, &l, &r, 1, 0), TP_EPROTO);
        tp_buf_free(&bad);
    }
    tp_buf_free(&buf);
    tpd_leafmemo_free(&m);
    tpd_arena_destroy(a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("leafmemo");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int nf;
    tcase_add_test(tc, test_leafmemo_as_full_read);
    tcase_add_test(tc, test_leafmemo_refuses_as_full_read);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
