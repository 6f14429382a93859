/* SPDX-License-Identifier: MIT
 * pyapi.c -- resolves the CPython API table with dlsym(RTLD_DEFAULT).  Works
 * for a shared libpython and for an interpreter that exports its symbols from
 * the executable, before and after the interpreter is initialised. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "agent/pyapi.h"

tpa_pyapi tpa_py;

#define FN(name)                                                                                   \
    do {                                                                                           \
        void *p_ = dlsym(RTLD_DEFAULT, #name);                                                     \
        if (p_ == NULL) return -1;                                                                 \
        memcpy(&tpa_py.name, &p_, sizeof p_);                                                      \
    } while (0)
#define OBJ(field, sym)                                                                            \
    do {                                                                                           \
        tpa_py.field = dlsym(RTLD_DEFAULT, sym);                                                   \
        if (tpa_py.field == NULL) return -1;                                                       \
    } while (0)

int tpa_pyapi_resolve(void)
{
    FN(Py_IsInitialized);
    FN(PySys_AddAuditHook);
    FN(PyGILState_Ensure);
    FN(PyGILState_Release);
    FN(PyEval_SaveThread);
    FN(PyEval_RestoreThread);
    FN(Py_IncRef);
    FN(Py_DecRef);
    FN(Py_CompileString);
    FN(PyEval_EvalCode);
    FN(PyEval_GetBuiltins);
    FN(PyImport_GetModuleDict);
    FN(PyModule_New);
    FN(PyModule_GetDict);
    FN(PyCFunction_NewEx);
    FN(PyErr_Occurred);
    FN(PyErr_Clear);
    FN(PyErr_Fetch);
    FN(PyErr_SetString);
    FN(PyObject_GetAttrString);
    FN(PyObject_SetAttrString);
    FN(PyObject_HasAttrString);
    FN(PyObject_CallObject);
    FN(PyObject_CallNoArgs);
    FN(PyObject_Str);
    FN(PyObject_Repr);
    FN(PyObject_Type);
    FN(PyObject_IsInstance);
    FN(PyObject_IsTrue);
    FN(PyObject_GetIter);
    FN(PyIter_Next);
    FN(PyDict_New);
    FN(PyDict_SetItemString);
    FN(PyDict_Next);
    FN(PyDict_Size);
    FN(PyDict_GetItemString);
    FN(PyList_New);
    FN(PyList_Append);
    FN(PyList_Size);
    FN(PyList_GetItem);
    FN(PyTuple_New);
    FN(PyTuple_SetItem);
    FN(PyTuple_Size);
    FN(PyTuple_GetItem);
    FN(PyLong_FromLongLong);
    FN(PyLong_FromUnsignedLongLong);
    FN(PyLong_AsLongLong);
    FN(PyLong_AsLongLongAndOverflow);
    FN(PyLong_AsUnsignedLongLong);
    FN(PyFloat_FromDouble);
    FN(PyFloat_AsDouble);
    FN(PyBool_FromLong);
    FN(PyUnicode_FromString);
    FN(PyUnicode_FromStringAndSize);
    FN(PyUnicode_AsUTF8AndSize);
    FN(PyBytes_FromStringAndSize);
    FN(PyBytes_AsStringAndSize);
    OBJ(Dict_Type, "PyDict_Type");
    OBJ(List_Type, "PyList_Type");
    OBJ(Tuple_Type, "PyTuple_Type");
    OBJ(Long_Type, "PyLong_Type");
    OBJ(Float_Type, "PyFloat_Type");
    OBJ(Bool_Type, "PyBool_Type");
    OBJ(Unicode_Type, "PyUnicode_Type");
    OBJ(Bytes_Type, "PyBytes_Type");
    OBJ(ByteArray_Type, "PyByteArray_Type");
    OBJ(None, "_Py_NoneStruct");
    OBJ(True, "_Py_TrueStruct");
    OBJ(False, "_Py_FalseStruct");
    tpa_py.Exc_RuntimeError = dlsym(RTLD_DEFAULT, "PyExc_RuntimeError");
    tpa_py.Exc_TypeError = dlsym(RTLD_DEFAULT, "PyExc_TypeError");
    if (tpa_py.Exc_RuntimeError == NULL || tpa_py.Exc_TypeError == NULL) return -1;
    return 0;
}

PyObject *tpa_py_call0(PyObject *o, const char *name)
{
    PyObject *m = tpa_py.PyObject_GetAttrString(o, name), *r;
    if (m == NULL) return NULL;
    r = tpa_py.PyObject_CallNoArgs(m);
    tpa_py.Py_DecRef(m);
    return r;
}
