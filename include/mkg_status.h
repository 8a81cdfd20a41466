/* mkg_status.h - status codes returned by every mkgemm host call.
 *
 * One code per distinct reason, listed once in MKG_STATUS_LIST; the enum and
 * the strings returned by mkg_status_string() both expand from that list.
 * The library never exits or aborts: it returns one of these.
 */
#ifndef MKG_STATUS_H
#define MKG_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/*         code                          message */
#define MKG_STATUS_LIST(X)                                                                   \
    X(MKG_OK,                       "success")                                               \
    X(MKG_ERR_NULL_DESC,            "descriptor pointer is NULL")                            \
    X(MKG_ERR_BAD_M,                "M must be >= 1")                                        \
    X(MKG_ERR_BAD_N,                "N must be >= 1")                                        \
    X(MKG_ERR_BAD_K,                "K must be >= 1")                                        \
    X(MKG_ERR_K_ALIGN,              "K * element size must be a multiple of 16 bytes")       \
    X(MKG_ERR_DIM_TOO_LARGE,        "a dimension or leading dimension exceeds 2^31 - 1")     \
    X(MKG_ERR_BAD_IN_DTYPE,         "input dtype is not supported")                          \
    X(MKG_ERR_DTYPE_MISMATCH,       "A and B must have the same input dtype")                \
    X(MKG_ERR_BAD_OUT_DTYPE,        "output dtype is not supported")                         \
    X(MKG_ERR_BAD_EPILOGUE,         "unknown epilogue kind")                                 \
    X(MKG_ERR_NULL_AUX,             "the residual epilogue needs its R pointer (aux)")      \
    X(MKG_ERR_MISALIGNED_AUX,       "aux is not 16-byte aligned or ld_aux is too small or not 16-byte rows") \
    X(MKG_ERR_SILU_N,               "the SiLU-mul epilogue needs N a multiple of 16 and ldc >= N / 2") \
    X(MKG_ERR_DEPS_NO_STALL,        "a GEMM that waits on dependencies needs a stall word")  \
    X(MKG_ERR_BAD_KC,               "K chunk must be 0, >= K, or a positive multiple of 64 (128 for fp8)") \
    X(MKG_ERR_BAD_SCALE,            "fp8 inputs need finite, nonzero a_scale, b_scale and product") \
    X(MKG_ERR_WORKSPACE_TOO_SMALL,  "split-K workspace is smaller than the schedule needs")  \
    X(MKG_ERR_NULL_A,               "A pointer is NULL")                                     \
    X(MKG_ERR_NULL_B,               "B pointer is NULL")                                     \
    X(MKG_ERR_NULL_C,               "C pointer is NULL")                                     \
    X(MKG_ERR_MISALIGNED_A,         "A base pointer is not 16-byte aligned")                 \
    X(MKG_ERR_MISALIGNED_B,         "B base pointer is not 16-byte aligned")                 \
    X(MKG_ERR_MISALIGNED_C,         "C base pointer is not 16-byte aligned")                 \
    X(MKG_ERR_LDA_TOO_SMALL,        "lda is smaller than K")                                 \
    X(MKG_ERR_LDB_TOO_SMALL,        "ldb is smaller than K")                                 \
    X(MKG_ERR_LDC_TOO_SMALL,        "ldc is smaller than N")                                 \
    X(MKG_ERR_LDA_ALIGN,            "lda * element size is not a multiple of 16 bytes")      \
    X(MKG_ERR_LDB_ALIGN,            "ldb * element size is not a multiple of 16 bytes")      \
    X(MKG_ERR_LDC_ALIGN,            "ldc * element size is not a multiple of 16 bytes")      \
    X(MKG_ERR_UNKNOWN_SCHEDULE,     "schedule id is not in the schedule table")              \
    X(MKG_ERR_SCHEDULE_INELIGIBLE,  "schedule does not support this descriptor's dtypes")    \
    X(MKG_ERR_BAD_GRID,             "grid size must be >= 0 (0 means one CTA per SM)")       \
    X(MKG_ERR_NULL_OUT,             "output pointer argument is NULL")                       \
    X(MKG_ERR_NO_DEVICE,            "no CUDA device is available")                           \
    X(MKG_ERR_UNSUPPORTED_DEVICE,   "device is not compute capability 9.0 (sm_90a)")         \
    X(MKG_ERR_DRIVER_ENTRY,         "cuTensorMapEncodeTiled could not be obtained")          \
    X(MKG_ERR_TENSOR_MAP,           "cuTensorMapEncodeTiled rejected the operand")           \
    X(MKG_ERR_OUT_OF_MEMORY,        "host or device allocation failed")                      \
    X(MKG_ERR_CUDA,                 "a CUDA runtime call failed")                            \
    X(MKG_ERR_BAD_M_MAX,            "layer m_max must be >= 1")                              \
    X(MKG_ERR_BAD_MODE,             "unknown invariance mode")                               \
    X(MKG_ERR_M_EXCEEDS_M_MAX,      "M is larger than the m_max the layer was planned for")  \
    X(MKG_ERR_BAD_LAYER,            "layer index is outside the table")                      \
    X(MKG_ERR_TABLE_NOT_UPLOADED,   "the layer table has not been uploaded to the device")   \
    X(MKG_ERR_TABLE_MISSING,        "schedule table file cannot be opened")                  \
    X(MKG_ERR_TABLE_CORRUPT,        "schedule table file is malformed or fails its checksum") \
    X(MKG_ERR_TABLE_TRUNCATED,      "schedule table file ends early")                        \
    X(MKG_ERR_TABLE_VERSION,        "schedule table file is for another library version")    \
    X(MKG_ERR_TABLE_GPU,            "schedule table file is for another GPU or SM count")    \
    X(MKG_ERR_STALLED,              "a megakernel dependency wait timed out (the stall record names the task)") \
    X(MKG_ERR_DISPATCH,             "the device dispatcher rejected a table entry (see the error word)") \
    X(MKG_ERR_TABLE_LAYER,          "schedule table file does not match the layer list")     \
    X(MKG_ERR_BAD_FLAGS,            "launch flags hold a bit that is not an MKG_LAUNCH_FLAG_*") \
    X(MKG_ERR_BAD_BLOCK_SCALES,     "block scales need e4m3 inputs, both scale pointers 4-byte aligned, ld_a_block_scales >= M, kc = 128 and no dependency wait") \
    X(MKG_ERR_DEPS_FLAGS,           "deps.flags holds a bit that is not an MKG_DEPS_*")      \
    X(MKG_ERR_SCHEDULE_K_DEPTH,     "two-sub-tile stages need K (and a chunked K's KC) in an even number of 128-byte K tiles")

typedef enum mkg_status {
#define MKG_X_ENUM(code, msg) code,
    MKG_STATUS_LIST(MKG_X_ENUM)
#undef MKG_X_ENUM
    MKG_STATUS_COUNT
} mkg_status;

/** Human-readable message for a status; never NULL. */
const char *mkg_status_string(mkg_status s);

/** The enum name of a status ("MKG_ERR_BAD_K"); never NULL. */
const char *mkg_status_name(mkg_status s);

#ifdef __cplusplus
}
#endif
#endif /* MKG_STATUS_H */
