/* mkg_status.c - names and messages of status codes and dtypes. */
#include "mkg_status.h"
#include "mkg_types.h"

static const char *const mkg_status_messages[] = {
#define MKG_X_MSG(code, msg) msg,
    MKG_STATUS_LIST(MKG_X_MSG)
#undef MKG_X_MSG
};

static const char *const mkg_status_names[] = {
#define MKG_X_NAME(code, msg) #code,
    MKG_STATUS_LIST(MKG_X_NAME)
#undef MKG_X_NAME
};

const char *mkg_status_string(mkg_status s)
{
    if ((int)s < 0 || s >= MKG_STATUS_COUNT)
        return "unknown status";
    return mkg_status_messages[s];
}

const char *mkg_status_name(mkg_status s)
{
    if ((int)s < 0 || s >= MKG_STATUS_COUNT)
        return "MKG_STATUS_UNKNOWN";
    return mkg_status_names[s];
}

const char *mkg_dtype_name(mkg_dtype t)
{
    switch (t) {
    case MKG_DTYPE_BF16: return "bf16";
    case MKG_DTYPE_FP16: return "fp16";
    case MKG_DTYPE_FP32: return "fp32";
    case MKG_DTYPE_E4M3: return "e4m3";
    default:             return "unknown";
    }
}
