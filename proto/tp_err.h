/* SPDX-License-Identifier: MIT
 * tp_err.h -- the one error enum shared by every TrainParity component. */
#ifndef TP_PROTO_TP_ERR_H
#define TP_PROTO_TP_ERR_H

typedef enum tp_err {
    TP_OK = 0,
    TP_ENOMEM,    /* out of memory */
    TP_EINVAL,    /* invalid argument from the caller */
    TP_EPROTO,    /* malformed wire message */
    TP_EVERSION,  /* unsupported schema or database version */
    TP_EIO,       /* system I/O error */
    TP_ENOENT,    /* no such object, file or key */
    TP_EDB,       /* database error */
    TP_ECORRUPT,  /* corrupt database or file */
    TP_ETIMEDOUT, /* an operation ran past its deadline */
    TP_ECLOSED,   /* peer or object closed */
    TP_EFULL,     /* a bounded queue or buffer is full */
    TP_ENET,      /* messaging (nng) error */
    TP_ECHILD,    /* a child process could not be started */
} tp_err;

/* tp_strerror returns a static, human-readable description of err. */
const char *tp_strerror(tp_err err);

#endif
