/* mkg_tensor_map.c - encodes a GEMM's TMA tensor maps into mkg_gemm_params.
 *
 * cuTensorMapEncodeTiled comes from the driver through the runtime's entry-point
 * query, so nothing links against libcuda at build time. Each operand (rows x K,
 * K contiguous) gets one map per box height in MKG_BOX_CLASSES: box {64, rows},
 * 128-byte swizzle, out-of-bounds elements read as zero. C (M x N) gets one map
 * per epilogue box height (8..64 rows of 128 bytes); TMA stores clip at M and N.
 * Every map's L2 promotion is mkg_tma_l2_promotion() bytes.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "mkg_gemm.h"
#include "mkg_tile_order.h"

typedef CUresult (*mkg_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                        const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                        const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                        CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static mkg_status mkg_get_encoder(mkg_encode_tiled_fn *out)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn) {
        (void)cudaGetLastError();
        return MKG_ERR_DRIVER_ENTRY;
    }
    *out = (mkg_encode_tiled_fn)fn;
    return MKG_OK;
}

static CUtensorMapDataType mkg_tma_dtype(mkg_dtype t)
{
    return t == MKG_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
         : t == MKG_DTYPE_FP16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
         : t == MKG_DTYPE_E4M3 ? CU_TENSOR_MAP_DATA_TYPE_UINT8      /* the TMA moves bytes */
                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

int mkg_tma_l2_promotion(void)
{
    static int bytes = -1;
    if (bytes < 0) {
        const char *e = getenv("MKG_TMA_L2_PROMOTION");
        const int v = e ? atoi(e) : -1;
        bytes = e && (v == 0 || v == 64 || v == 128 || v == 256) ? v : MKG_TMA_L2_PROMOTION_DEFAULT;
    }
    return bytes;
}

static CUtensorMapL2promotion mkg_tma_promotion_enum(int bytes)
{
    return bytes == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
         : bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
         : bytes == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                        : CU_TENSOR_MAP_L2_PROMOTION_NONE;
}

/* A rows x cols matrix (cols contiguous, row stride ld elements) with a box of
 * 128 bytes of columns by box_rows rows, 128-byte swizzled. */
static mkg_status mkg_encode_operand(mkg_encode_tiled_fn enc, CUtensorMap *map, const void *ptr, mkg_dtype t,
                                     int rows, int cols, long long ld, int box_rows)
{
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * (cuuint64_t)mkg_dtype_size(t)};
    const cuuint32_t box[2] = {(cuuint32_t)(128 / mkg_dtype_size(t)), (cuuint32_t)box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUtensorMapDataType dt = mkg_tma_dtype(t);
    CUresult r = enc(map, dt, 2, (void *)ptr, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, mkg_tma_promotion_enum(mkg_tma_l2_promotion()),
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? MKG_OK : MKG_ERR_TENSOR_MAP;
}

void mkg_gemm_bind_workspace(mkg_gemm_params *p, int m, int n, void *workspace)
{
    p->counters = (unsigned int *)workspace;
    p->partials = workspace ? (float *)((char *)workspace + mkg_workspace_counter_bytes(m, n)) : NULL;
}

mkg_status mkg_gemm_encode_params(const mkg_gemm_desc *d, mkg_gemm_params *out)
{
    mkg_status st = mkg_gemm_validate(d);
    if (st != MKG_OK)
        return st;
    if (!out)
        return MKG_ERR_NULL_OUT;
    mkg_encode_tiled_fn enc;
    st = mkg_get_encoder(&enc);
    if (st != MKG_OK)
        return st;
    memset(out, 0, sizeof(*out));
    for (int c = 0; c < MKG_BOX_CLASSES; ++c) {
        st = mkg_encode_operand(enc, &out->a_map[c], d->a, d->a_type, d->m, d->k, d->lda, mkg_box_rows(c));
        if (st != MKG_OK)
            return st;
        st = mkg_encode_operand(enc, &out->b_map[c], d->b, d->b_type, d->n, d->k, d->ldb, mkg_box_rows(c));
        if (st != MKG_OK)
            return st;
    }
    for (int c = 0; c < MKG_C_BOX_CLASSES; ++c) {
        st = mkg_encode_operand(enc, &out->c_map[c], d->c, d->c_type, d->m, mkg_gemm_c_cols(d), d->ldc, mkg_box_rows(c));
        if (st != MKG_OK)
            return st;
    }
    out->c = d->c;
    out->ldc = d->ldc;
    out->m = d->m;
    out->n = d->n;
    out->k = d->k;
    out->in_type = (int)d->a_type;
    out->c_type = (int)d->c_type;
    out->epilogue = (int)d->epilogue;
    out->aux = d->aux;
    out->ld_aux = d->ld_aux;
    out->deps = d->deps;
    out->kc = d->kc;
    out->chunks = mkg_chunk_count(d->k, d->kc);
    out->alpha = d->a_type == MKG_DTYPE_E4M3 ? d->a_scale * d->b_scale : 1.0f;
    out->a_bscales = d->a_block_scales;
    out->ld_a_bscales = d->ld_a_block_scales;
    out->b_bscales = d->b_block_scales;
    mkg_gemm_bind_workspace(out, d->m, d->n, d->workspace);
    return MKG_OK;
}
