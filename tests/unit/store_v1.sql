-- SPDX-License-Identifier: MIT
-- store_v1.sql -- a version 1 database as builds of that version made it:
-- daemon/store/schema.sql as it was at version 1, copied verbatim below
-- (its leaves table is what version 2 drops), then the version and the
-- application id that daemon/store/store.c writes, and WAL mode, as the
-- daemon leaves its files.  store_test.c runs it on an empty file and fills
-- the tables to test the migration to version 2.  Never edit the copy (its
-- last comment names add_columns, which version 2's migration replaced).

-- SPDX-License-Identifier: MIT
-- schema.sql -- the daemon's database, version 1 (PRAGMA user_version = 1).
-- store.c runs this once on an empty database, inside the migration
-- transaction.  A later version adds a migration; it never edits this file.

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
    exit_signal INTEGER                    -- NULL if none
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

-- One row per leaf of snapshot/sched "leaves", step "grads" and save/load
-- "manifest" (src).  value holds a 'v' leaf (NULL, integer, real or text;
-- a bool is 0/1 with vtype 'bool'); nitems a 'd' leaf's item count.
CREATE TABLE leaves (
    event_id INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,                    -- 't', 'v', 'd'
    dtype TEXT,
    shape TEXT,                            -- "[3,4]"
    digest BLOB,
    sum REAL,
    l2 REAL,
    maxabs REAL,
    nonfinite INTEGER,
    value,
    vtype TEXT,                            -- 'nil','bool','int','float','str'
    nitems INTEGER,
    device TEXT,
    blob INTEGER,
    src TEXT NOT NULL                      -- 'leaves', 'grads', 'manifest'
);
CREATE INDEX leaves_event ON leaves (event_id);

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

-- Added to version 1 later, by store.c (add_columns) when a database opened
-- for writing lacks it; readers never need it:
--   executions.key TEXT: the execution's secret (32 hex digits) made by
--   exec.create; a batch is stored only when its "key" equals it.  NULL for
--   executions made before keys existed: they take no more batches.

PRAGMA user_version = 1;
PRAGMA application_id = 1414558257; -- 0x54507231, "TPr1" (TPD_STORE_APP_ID)
PRAGMA journal_mode = WAL;
