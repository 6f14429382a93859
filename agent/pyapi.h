/* SPDX-License-Identifier: MIT
 * pyapi.h -- the CPython C API, resolved at boot into a table.
 *
 * The agent links no libpython and includes no Python.h: it lands in both
 * pyenv's shared-libpython interpreter and Debian's static one, and in
 * processes that are not Python at all.  Only functions of the stable ABI are
 * used, through pointers resolved with dlsym(RTLD_DEFAULT); objects are opaque
 * and never touched through layout macros (Py_INCREF and friends are
 * Py_IncRef/Py_DecRef calls).  Every pointer is valid once
 * tpa_pyapi_resolve() returned 0, and only while the caller holds the GIL. */
#ifndef TP_AGENT_PYAPI_H
#define TP_AGENT_PYAPI_H

#include <stddef.h>
#include <sys/types.h>

typedef struct _object PyObject;
typedef struct _ts PyThreadState;
typedef ssize_t Py_ssize_t;
typedef PyObject *(*PyCFunction)(PyObject *, PyObject *);

typedef struct PyMethodDef {
    const char *ml_name;
    PyCFunction ml_meth;
    int ml_flags;
    const char *ml_doc;
} PyMethodDef;

#define TPA_METH_VARARGS  0x0001
#define TPA_METH_NOARGS   0x0004
#define TPA_METH_O        0x0008
#define TPA_PY_FILE_INPUT 257

typedef struct tpa_pyapi {
    int (*Py_IsInitialized)(void);
    int (*PySys_AddAuditHook)(int (*)(const char *, PyObject *, void *), void *);
    int (*PyGILState_Ensure)(void);
    void (*PyGILState_Release)(int);
    PyThreadState *(*PyEval_SaveThread)(void);
    void (*PyEval_RestoreThread)(PyThreadState *);
    void (*Py_IncRef)(PyObject *);
    void (*Py_DecRef)(PyObject *);
    PyObject *(*Py_CompileString)(const char *, const char *, int);
    PyObject *(*PyEval_EvalCode)(PyObject *, PyObject *, PyObject *);
    PyObject *(*PyEval_GetBuiltins)(void);
    PyObject *(*PyImport_GetModuleDict)(void);
    PyObject *(*PyModule_New)(const char *);
    PyObject *(*PyModule_GetDict)(PyObject *);
    PyObject *(*PyCFunction_NewEx)(PyMethodDef *, PyObject *, PyObject *);
    PyObject *(*PyErr_Occurred)(void);
    void (*PyErr_Clear)(void);
    void (*PyErr_Fetch)(PyObject **, PyObject **, PyObject **);
    void (*PyErr_SetString)(PyObject *, const char *);
    PyObject *(*PyObject_GetAttrString)(PyObject *, const char *);
    int (*PyObject_SetAttrString)(PyObject *, const char *, PyObject *);
    int (*PyObject_HasAttrString)(PyObject *, const char *);
    PyObject *(*PyObject_CallObject)(PyObject *, PyObject *);
    PyObject *(*PyObject_CallNoArgs)(PyObject *);
    PyObject *(*PyObject_Str)(PyObject *);
    PyObject *(*PyObject_Repr)(PyObject *);
    PyObject *(*PyObject_Type)(PyObject *);
    int (*PyObject_IsInstance)(PyObject *, PyObject *);
    int (*PyObject_IsTrue)(PyObject *);
    PyObject *(*PyObject_GetIter)(PyObject *);
    PyObject *(*PyIter_Next)(PyObject *);
    PyObject *(*PyDict_New)(void);
    int (*PyDict_SetItemString)(PyObject *, const char *, PyObject *);
    int (*PyDict_Next)(PyObject *, Py_ssize_t *, PyObject **, PyObject **);
    Py_ssize_t (*PyDict_Size)(PyObject *);
    PyObject *(*PyDict_GetItemString)(PyObject *, const char *); /* borrowed */
    PyObject *(*PyList_New)(Py_ssize_t);
    int (*PyList_Append)(PyObject *, PyObject *);
    Py_ssize_t (*PyList_Size)(PyObject *);
    PyObject *(*PyList_GetItem)(PyObject *, Py_ssize_t);
    PyObject *(*PyTuple_New)(Py_ssize_t);
    int (*PyTuple_SetItem)(PyObject *, Py_ssize_t, PyObject *);
    Py_ssize_t (*PyTuple_Size)(PyObject *);
    PyObject *(*PyTuple_GetItem)(PyObject *, Py_ssize_t);
    PyObject *(*PyLong_FromLongLong)(long long);
    PyObject *(*PyLong_FromUnsignedLongLong)(unsigned long long);
    long long (*PyLong_AsLongLong)(PyObject *);
    long long (*PyLong_AsLongLongAndOverflow)(PyObject *, int *);
    unsigned long long (*PyLong_AsUnsignedLongLong)(PyObject *);
    PyObject *(*PyFloat_FromDouble)(double);
    double (*PyFloat_AsDouble)(PyObject *);
    PyObject *(*PyBool_FromLong)(long);
    PyObject *(*PyUnicode_FromString)(const char *);
    PyObject *(*PyUnicode_FromStringAndSize)(const char *, Py_ssize_t);
    const char *(*PyUnicode_AsUTF8AndSize)(PyObject *, Py_ssize_t *);
    PyObject *(*PyBytes_FromStringAndSize)(const char *, Py_ssize_t);
    int (*PyBytes_AsStringAndSize)(PyObject *, char **, Py_ssize_t *);
    /* type objects (data symbols) */
    PyObject *Dict_Type, *List_Type, *Tuple_Type, *Long_Type, *Float_Type, *Bool_Type,
        *Unicode_Type, *Bytes_Type, *ByteArray_Type;
    PyObject *None, *True, *False;
    PyObject **Exc_RuntimeError, **Exc_TypeError;
} tpa_pyapi;

/* tpa_py is the resolved table; valid after tpa_pyapi_resolve() returned 0. */
extern tpa_pyapi tpa_py;

/* tpa_py_call0 calls o's method name without arguments: a new reference,
 * or NULL with a Python exception set. */
PyObject *tpa_py_call0(PyObject *o, const char *name);

/* tpa_pyapi_resolve fills tpa_py.  Returns 0 when every entry was found,
 * -1 otherwise (then the agent stays inert). */
int tpa_pyapi_resolve(void);

#endif
