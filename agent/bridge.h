/* SPDX-License-Identifier: MIT
 * bridge.h -- the `_trainparity_agent` module handed to the embedded glue. */
#ifndef TP_AGENT_BRIDGE_H
#define TP_AGENT_BRIDGE_H

#include "agent/pyapi.h"

/* tpa_bridge_module builds the module of C functions, and registers with the
 * sender (tpa_send_on_end) what ends the process when the daemon says its
 * execution is over: resume's I, another process of which was interrupted.
 * New reference, or NULL with a Python exception set.  GIL held. */
PyObject *tpa_bridge_module(void);

/* tpa_bridge_bye emits the bye event (once), drains the queue, asks the
 * daemon to confirm, and stops the sender.  Needs no Python: also used by
 * the library destructor when the interpreter's exit hooks did not run.
 * Any thread; while another thread of the process says bye it waits for
 * that one to end. */
void tpa_bridge_bye(const char *reason, int has_code, long long code, const char *exc);

#endif
