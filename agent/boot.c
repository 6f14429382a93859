/* SPDX-License-Identifier: MIT
 * boot.c -- the agent's entry: the library constructor, the CPython audit
 * hook that boots the glue, fork handling and the destructor.
 *
 * The constructor runs in every process the preload reaches.  It does
 * nothing unless TRAINPARITY_EXEC is set and the process is a CPython
 * interpreter (Py_IsInitialized is visible).  Then it registers an audit hook
 * before the interpreter starts; the first `cpython.run_*` event (the main
 * script, -c, -m, stdin) boots the glue: the `_trainparity_agent` module of C
 * functions and the embedded Python package `_trainparity_glue` (agent/glue/,
 * glue.h) that patches torch when it is imported.  Its modules are executed
 * in the order of the table, each registered in sys.modules first, so that
 * a module's relative imports of earlier ones find them there; no import
 * system finder is involved and nothing is read from disk.
 * Polling and dlopen interposition were measured to miss boots
 * (docs/architecture.md, "Measured facts"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/bridge.h"
#include "agent/config.h"
#include "agent/emit.h"
#include "agent/glue.h"
#include "agent/log.h"
#include "agent/pyapi.h"
#include "agent/send.h"

#define P tpa_py

#define TPA_GLUE_PACKAGE "_trainparity_glue"

/* The glue's file names.  A warning that torch raises with a stacklevel
 * (the deprecated torch.cuda.amp.GradScaler, lr_scheduler.step() before
 * optimizer.step()) must name the user's line, not the glue's wrapper it
 * passed through: CPython's warnings skip the frames of a file whose name
 * holds both "importlib" and "_bootstrap" when they count a stacklevel (the
 * import system's own frames), so the name says that. */
#define TPA_GLUE_FILENAME "<trainparity-glue %s, skipped by warnings like importlib_bootstrap>"

static int hooked; /* the audit hook is registered */
static int booted; /* the glue ran (or failed to) */
static int forked; /* this is a forked child of a booted process */

static void log_python_error(const char *what)
{
    PyObject *t = NULL, *v = NULL, *tb = NULL, *s;
    P.PyErr_Fetch(&t, &v, &tb);
    if (tpa_cfg.debug && v != NULL && (s = P.PyObject_Repr(v)) != NULL) {
        Py_ssize_t n;
        const char *u = P.PyUnicode_AsUTF8AndSize(s, &n);
        TPA_LOG("%s: %.*s", what, u ? (int)n : 0, u ? u : "");
        P.Py_DecRef(s);
    }
    P.PyErr_Clear();
    if (t) P.Py_DecRef(t);
    if (v) P.Py_DecRef(v);
    if (tb) P.Py_DecRef(tb);
}

/* run_module executes the glue's module g: the package itself (pkg) for
 * "__init__", else a new module registered as _trainparity_glue.<name> in
 * sys.modules and as an attribute of pkg before it runs.  Returns 0, or -1
 * with a Python error set. */
static int run_module(PyObject *mods, PyObject *pkg, const tpa_glue_module *g)
{
    char qual[128], file[256];
    PyObject *mod, *dict, *s, *code = NULL, *res = NULL;
    int init = strcmp(g->name, "__init__") == 0, bad;
    snprintf(qual, sizeof qual, "%s.%s", TPA_GLUE_PACKAGE, g->name);
    snprintf(file, sizeof file, TPA_GLUE_FILENAME, init ? TPA_GLUE_PACKAGE : qual);
    mod = init ? pkg : P.PyModule_New(qual);
    if (mod == NULL) return -1;
    if (init) P.Py_IncRef(mod);
    if (P.PyDict_SetItemString(mods, init ? TPA_GLUE_PACKAGE : qual, mod) != 0) goto done;
    if (!init && P.PyObject_SetAttrString(pkg, g->name, mod) != 0) goto done;
    dict = P.PyModule_GetDict(mod);
    s = P.PyUnicode_FromString(TPA_GLUE_PACKAGE);
    if (s == NULL) goto done;
    bad = P.PyDict_SetItemString(dict, "__package__", s) != 0;
    P.Py_DecRef(s);
    if (bad || P.PyDict_SetItemString(dict, "__builtins__", P.PyEval_GetBuiltins()) != 0) goto done;
    code = P.Py_CompileString(g->source, file, TPA_PY_FILE_INPUT);
    if (code != NULL) res = P.PyEval_EvalCode(code, dict, dict);
done:
    if (res) P.Py_DecRef(res);
    if (code) P.Py_DecRef(code);
    P.Py_DecRef(mod);
    return res != NULL ? 0 : -1;
}

static void boot(void)
{
    PyObject *mods, *agent = NULL, *pkg = NULL, *path = NULL;
    const char *rank = getenv("RANK");
    booted = 1;
    tpa_emit_init(rank ? atoll(rank) : -1);
    mods = P.PyImport_GetModuleDict();
    agent = tpa_bridge_module();
    pkg = P.PyModule_New(TPA_GLUE_PACKAGE);
    path = P.PyList_New(0);
    if (mods == NULL || agent == NULL || pkg == NULL || path == NULL) goto fail;
    if (P.PyDict_SetItemString(mods, "_trainparity_agent", agent) != 0) goto fail;
    if (P.PyObject_SetAttrString(pkg, "__path__", path) != 0) goto fail;
    for (const tpa_glue_module *g = tpa_glue_table; g->name != NULL; g++)
        if (run_module(mods, pkg, g) != 0) goto fail;
    TPA_LOG("booted");
    goto done;
fail:
    log_python_error("boot failed; the agent stays inert");
    tpa_emit_disable();
done:
    if (path) P.Py_DecRef(path);
    if (pkg) P.Py_DecRef(pkg);
    if (agent) P.Py_DecRef(agent);
}

static int audit(const char *event, PyObject *args, void *data)
{
    (void)args, (void)data;
    if (booted || forked) return 0;
    if (event[0] == 'c' && strncmp(event, "cpython.run_", 12) == 0) {
        if (P.PyErr_Occurred()) return 0; /* never boot over a pending error */
        boot();
    }
    return 0;
}

static void atfork_child(void)
{
    forked = 1;
    tpa_emit_atfork_child();
    tpa_send_atfork_child();
}

__attribute__((constructor)) static void tpa_init(void)
{
    tpa_config_load();
    if (!tpa_cfg.active) return;
    if (dlsym(RTLD_DEFAULT, "Py_IsInitialized") == NULL) return; /* not Python */
    if (tpa_pyapi_resolve() != 0) {
        TPA_LOG("incomplete CPython API; staying inert");
        return;
    }
    if (P.Py_IsInitialized()) return; /* loaded into a running interpreter: not ours */
    if (P.PySys_AddAuditHook(audit, NULL) != 0) return;
    hooked = 1;
    pthread_atfork(NULL, NULL, atfork_child);
}

__attribute__((destructor)) static void tpa_fini(void)
{
    /* the glue's exit hook normally said bye; this covers exit() from C */
    if (hooked && booted && !forked && tpa_emit_count() > 0) {
        tpa_bridge_bye("exit", 0, 0, NULL);
    }
}
