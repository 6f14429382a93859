/* SPDX-License-Identifier: MIT
 * provenance.h -- where a restore's content came from.
 *
 * A load_state_dict or an RNG setter that runs after a checkpoint load is not
 * necessarily a restore from that checkpoint: accelerate's
 * AcceleratedOptimizer reloads the optimizer's own state, Lightning's
 * isolate_rng puts back an RNG state it kept in memory.  The agent sends what
 * each restore put back, flattened like a load's manifest; a restore came
 * from a load when everything it put back is in that load's manifest. */
#ifndef TP_DAEMON_CHECKS_RESUME_PROVENANCE_H
#define TP_DAEMON_CHECKS_RESUME_PROVENANCE_H

#include "daemon/obs/obs.h"

/* tpd_restore_source is the latest load of p's, before r, whose manifest
 * holds everything r put back: tensors and digests by content, other values
 * by name and value.  NULL when no load holds it (the object's own state, a
 * state kept in memory), when r put back nothing, and when r carries no
 * manifest (a seed, or an agent that did not send one). */
const tpd_ckpt *tpd_restore_source(const tpd_proc *p, const tpd_restore *r);

#endif
