/* mkg_types.h - element types, epilogue kinds and tile-order enums shared by
 * host and device code.
 *
 * Plain C11 enums; device code uses the same values as template arguments.
 * MKG_HD marks small helpers that compile for both host and device.
 */
#ifndef MKG_TYPES_H
#define MKG_TYPES_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define MKG_HD __host__ __device__ __forceinline__
#else
#define MKG_HD inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mkg_dtype {
    MKG_DTYPE_BF16 = 0,
    MKG_DTYPE_FP16 = 1,
    MKG_DTYPE_FP32 = 2,
    MKG_DTYPE_E4M3 = 3,         /* FP8 e4m3 (OCP), inputs only: per-tensor scales in the descriptor */
    MKG_DTYPE_COUNT
} mkg_dtype;

/* What the epilogue does with the FP32 accumulator tile. */
typedef enum mkg_epilogue {
    MKG_EPI_STORE = 0,          /* C = A . B^T, converted to the output dtype */
    MKG_EPI_RESIDUAL = 1,       /* C = A . B^T + R (R: aux, same dtype and shape as C; may be C itself) */
    MKG_EPI_SILU_MUL = 2,       /* B rows interleave gate and up in blocks of 8 (row 16b+i = gate 8b+i,
                                   row 16b+8+i = up 8b+i); C[:, 8b+i] = silu(gate) * up, N/2 columns */
    MKG_EPI_COUNT
} mkg_epilogue;

/* Tile traversal order of a schedule's work units (see mkg_tile_order.h). */
typedef enum mkg_raster {
    MKG_RASTER_M = 0,           /* consecutive units walk down M inside a band of GROUP tile rows */
    MKG_RASTER_N = 1            /* consecutive units walk along N inside a band of GROUP tile columns */
} mkg_raster;

static MKG_HD size_t mkg_dtype_size(mkg_dtype t)
{
    return t == MKG_DTYPE_FP32 ? 4 : t == MKG_DTYPE_E4M3 ? 1 : 2;
}

const char *mkg_dtype_name(mkg_dtype t);

#ifdef __cplusplus
}
#endif
#endif /* MKG_TYPES_H */
