/* SPDX-License-Identifier: MIT
 * update.h -- the exact norm of an optimizer update (TRAINPARITY_UPDATE_NORM=1):
 * the parameters' bytes are copied before the step and compared after it. */
#ifndef TP_AGENT_UPDATE_H
#define TP_AGENT_UPDATE_H

#include <stdbool.h>

#include "agent/pyapi.h"

/* tpa_update_begin copies the bytes of every tensor in the list params.
 * Returns 0, or -1 with a Python exception set.  GIL held. */
int tpa_update_begin(PyObject *params);
/* tpa_update_end computes the L2 norm of (after - before) over the same
 * list and whether any byte changed.  Returns 0, or -1 with a Python
 * exception set (also when the list no longer matches the copy). */
int tpa_update_end(PyObject *params, double *norm, bool *changed);

#endif
