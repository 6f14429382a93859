/* SPDX-License-Identifier: MIT
 * emit.c -- sequence numbers and the open batch. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/emit.h"
#include "agent/send.h"

#define BATCH_FLUSH_BYTES (8u << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static tp_buf batch;
static size_t batch_off;
static uint32_t batch_n;
static uint64_t next_seq;
static uint64_t dropped;
static int64_t cur_step;
static tp_header hdr;
static volatile int enabled;

void tpa_emit_init(int64_t rank)
{
    hdr.run = tpa_cfg.run;
    hdr.exec = tpa_cfg.exec;
    hdr.pid = tpa_pid(getpid());
    hdr.rank = rank;
    if (tpa_cfg.token[0]) {
        hdr.tok = tpa_cfg.token;
        hdr.tok_len = 0;
        while (tpa_cfg.token[hdr.tok_len]) hdr.tok_len++;
    }
    /* without its execution's key no batch is stored (daemon/ingest/ingest.c) */
    if (tpa_cfg.exec_key[0]) {
        hdr.key = tpa_cfg.exec_key;
        hdr.key_len = 0;
        while (tpa_cfg.exec_key[hdr.key_len]) hdr.key_len++;
    }
    tp_buf_init(&batch);
    enabled = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* flush_locked hands the open batch to the sender; mu is held. */
static void flush_locked(void)
{
    uint8_t *data;
    size_t len;
    if (batch_n == 0) return;
    tp_enc_batch_end(&batch, batch_off, batch_n);
    if (batch.oom) {
        dropped += batch_n;
        tp_buf_free(&batch);
    } else {
        data = tp_buf_steal(&batch, &len);
        tpa_send_submit(data, len, batch_n, next_seq - batch_n, batch_off);
    }
    batch_n = 0;
}

uint64_t tpa_emit_commit(tp_kind k, const tp_buf *body)
{
    uint64_t seq;
    if (!enabled) return TPA_NO_SEQ;
    if (body->oom) {
        pthread_mutex_lock(&mu);
        dropped++;
        pthread_mutex_unlock(&mu);
        return TPA_NO_SEQ;
    }
    pthread_mutex_lock(&mu);
    if (batch_n == 0) {
        tp_buf_reset(&batch);
        batch_off = tp_enc_batch_begin(&batch, &hdr);
    }
    seq = next_seq++;
    tp_enc_event_begin(&batch, seq, now_ns(), cur_step, k);
    tp_buf_append(&batch, body->data, body->len);
    batch_n++;
    if (batch.len >= BATCH_FLUSH_BYTES) flush_locked();
    pthread_mutex_unlock(&mu);
    return seq;
}

void tpa_emit_flush(void)
{
    pthread_mutex_lock(&mu);
    if (enabled) flush_locked();
    pthread_mutex_unlock(&mu);
}

void tpa_emit_set_step(int64_t step)
{
    pthread_mutex_lock(&mu);
    cur_step = step;
    pthread_mutex_unlock(&mu);
}

int64_t tpa_emit_step(void)
{
    return cur_step;
}

void tpa_emit_set_rank(int64_t rank)
{
    pthread_mutex_lock(&mu);
    if (rank != hdr.rank) {
        flush_locked();
        hdr.rank = rank;
    }
    pthread_mutex_unlock(&mu);
}

uint64_t tpa_emit_count(void)
{
    return next_seq;
}

uint64_t tpa_emit_dropped(void)
{
    return dropped;
}

void tpa_emit_disable(void)
{
    enabled = 0;
}

bool tpa_emit_enabled(void)
{
    return enabled != 0;
}

void tpa_emit_atfork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    enabled = 0;
    batch_n = 0;
    /* the parent's batch memory is the parent's; never freed or sent here */
    tp_buf_init(&batch);
}
