/* SPDX-License-Identifier: MIT
 * xml_noicu.c -- the five ICU converter functions Debian's static libxml2
 * calls, each answering that the encoding is not supported, so that the
 * programs link libxml2 without ICU's 30 MB of data (cmake/FindXml2.cmake).
 * libxml2 asks ICU only for an encoding glibc's iconv does not convert;
 * the reports are UTF-8, which libxml2 converts itself.  ICU's headers
 * give the names their version suffix (ucnv_open_72 ...). */
#include <stddef.h>
#include <unicode/ucnv.h>
#include <unicode/ucnv_err.h>

UConverter *ucnv_open(const char *name, UErrorCode *err)
{
    (void)name;
    if (err != NULL) *err = U_FILE_ACCESS_ERROR;
    return NULL;
}

void ucnv_close(UConverter *cnv)
{
    (void)cnv;
}

void ucnv_convertEx(UConverter *to, UConverter *from, char **target, const char *target_limit,
                    const char **source, const char *source_limit, UChar *pivot_start,
                    UChar **pivot_source, UChar **pivot_target, const UChar *pivot_limit,
                    UBool reset, UBool flush, UErrorCode *err)
{
    if (err != NULL) *err = U_UNSUPPORTED_ERROR;
}

void ucnv_setToUCallBack(UConverter *cnv, UConverterToUCallback action, const void *context,
                         UConverterToUCallback *old_action, const void **old_context,
                         UErrorCode *err)
{
    if (err != NULL) *err = U_UNSUPPORTED_ERROR;
}

void ucnv_setFromUCallBack(UConverter *cnv, UConverterFromUCallback action, const void *context,
                           UConverterFromUCallback *old_action, const void **old_context,
                           UErrorCode *err)
{
    if (err != NULL) *err = U_UNSUPPORTED_ERROR;
}

void UCNV_TO_U_CALLBACK_STOP(const void *context, UConverterToUnicodeArgs *args, const char *units,
                             int32_t length, UConverterCallbackReason reason, UErrorCode *err)
{
}

void UCNV_FROM_U_CALLBACK_STOP(const void *context, UConverterFromUnicodeArgs *args,
                               const UChar *units, int32_t length, UChar32 code_point,
                               UConverterCallbackReason reason, UErrorCode *err)
{
}
