-- SPDX-License-Identifier: MIT
-- store_v2.sql -- a version 2 database as builds of that version made it:
-- daemon/store/schema.sql as it was at version 2, its tables copied
-- verbatim below.  store_test.c builds a version 2 file from it (and sets
-- user_version and application_id as that build did) to test the
-- migration to version 3.  Never edit the tables.

-- A run is one check (resume, accum, ...) and the executions it planned.
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    name TEXT,
    check_kind TEXT NOT NULL,
    params TEXT,
    created_ns INTEGER NOT NULL            -- CLOCK_REALTIME: when the check began
                                           -- (run.create's started_ago_ns)
);

-- An execution is one command of a run (baseline-a, interrupted, ...).
CREATE TABLE executions (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    role TEXT,
    argv TEXT,                             -- JSON array of strings
    created_ns INTEGER NOT NULL,
    finished_ns INTEGER,                   -- the first exec.finish call
    exit_status INTEGER,                   -- NULL if none
    exit_signal INTEGER,                   -- NULL if none
    key TEXT                               -- exec.create's secret (32 hex digits):
                                           -- a batch is stored only when its "key"
                                           -- equals it.  NULL in an execution made
                                           -- before keys (version 1): it takes no
                                           -- more batches
);
CREATE INDEX executions_run ON executions (run_id);

-- A process is created by the first batch from (exec_id, pid), hello or not.
CREATE TABLE processes (
    id INTEGER PRIMARY KEY,
    exec_id INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    ppid INTEGER,
    rank INTEGER,
    world INTEGER,
    local_rank INTEGER,
    role TEXT,
    agent TEXT,
    python TEXT,
    torch TEXT,
    numpy TEXT,
    argv TEXT,                             -- JSON array of strings
    cwd TEXT,
    exe TEXT,
    capture TEXT,
    cxx TEXT,
    interrupt_at INTEGER,
    hello_ns INTEGER,                      -- time_ns of the hello event
    bye_ns INTEGER,
    bye_reason TEXT,                       -- NULL: no bye stored
    bye_code INTEGER,
    bye_exc TEXT,
    spooled INTEGER,
    sent INTEGER,
    dropped INTEGER,
    errors INTEGER,
    nevents INTEGER NOT NULL DEFAULT 0,    -- distinct events stored
    max_seq INTEGER,                       -- highest seq stored, NULL if none
    UNIQUE (exec_id, pid)
);

-- Events; a seq stored twice (spool and socket) is kept once.  body is the
-- raw MessagePack body, except for blob events, whose body is rewritten to
-- {"digest", "size", ["dtype"], ["shape"]} (the bytes are in the blob store).
-- It is the only copy of what an event says: the leaves of a snapshot, a
-- step's grads, a manifest are read from it (proto's tp_leaf_read).
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    exec_id INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    time_ns INTEGER NOT NULL,
    step INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body BLOB NOT NULL,
    UNIQUE (exec_id, pid, seq)
);

-- Missing sequence ranges, recomputed when an execution finishes and after
-- a spool file is ingested.
CREATE TABLE gaps (
    exec_id INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL
);
CREATE INDEX gaps_exec ON gaps (exec_id, pid);

-- Tensor bytes live in <db>.blobs/ab/cdef...; this table describes them.
CREATE TABLE blobs (
    digest BLOB PRIMARY KEY,
    size INTEGER NOT NULL,
    dtype TEXT,
    shape TEXT
);

CREATE TABLE verdicts (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    check_kind TEXT NOT NULL,
    outcome TEXT NOT NULL,                 -- PASS, FAIL, ABSTAIN, ERROR
    step INTEGER,
    path TEXT,
    report TEXT,                           -- JSON
    text TEXT,
    created_ns INTEGER NOT NULL
);
CREATE INDEX verdicts_run ON verdicts (run_id);

CREATE TABLE counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
