/* probe_tmap.h - the tensor-map encoder the probe tools share (tools/rate_probe.cu,
 * tools/mimic_probe.cu): a row-major bf16 matrix of rows x cols, box {64 columns, box_rows},
 * 128-byte swizzle, L2 promotion 256 B (as the library's maps), through the driver entry point
 * obtained from the runtime. Exits on failure (probes only). Needs CK (mkg_check.h) defined.
 */
#ifndef MKG_PROBE_TMAP_H
#define MKG_PROBE_TMAP_H

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

typedef CUresult (*probe_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static void encode(CUtensorMap *map, const void *ptr, int rows, int cols, int box_rows)
{
    static probe_encode_fn enc = NULL;
    if (!enc) {
        void *fn = NULL;
        enum cudaDriverEntryPointQueryResult q;
        CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
        enc = (probe_encode_fn)fn;
    }
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    const cuuint32_t es[2] = {1, 1};
    if (enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)ptr, dims, strides, box, es,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
        exit(1);
    }
}

#endif /* MKG_PROBE_TMAP_H */
