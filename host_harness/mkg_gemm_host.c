/* mkg_gemm_host.c - create / launch / destroy a GEMM on the shipped persistent kernel.
 *
 * mkg_gemm_create validates first and touches CUDA only for a valid descriptor;
 * mkg_gemm_launch re-checks the schedule and grid and never launches on bad input.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mkg_gemm.h"
#include "mkg_internal.h"
#include "mkg_nvtx.h"
#include "mkg_tile_order.h"

struct mkg_gemm_op {
    mkg_gemm_desc desc;         /* workspace filled in when the op owns one */
    mkg_gemm_params *dev;       /* device copy of the params (megakernels, dispatch) */
    mkg_gemm_params *host;      /* host copy: the shipped kernel takes the params by value */
    void *owned_workspace;      /* allocated here when the caller passed none */
    int sms;                    /* multiprocessors of the device it was created on */
    int cluster_fit[MKG_SCHED_COUNT]; /* cluster rows: clusters resident at once (0: unknown) */
};

const void *mkg_kernel_sm90(mkg_dtype t, int s, int v)
{
    if (t == MKG_DTYPE_BF16)
        return mkg_kernel_sm90_bf16(s, v);
    if (t == MKG_DTYPE_FP16)
        return mkg_kernel_sm90_fp16(s, v);
    if (t == MKG_DTYPE_FP32)
        return mkg_kernel_sm90_fp32(s, v);
    if (t == MKG_DTYPE_E4M3)
        return mkg_kernel_sm90_e4m3(s, v);
    return NULL;
}

mkg_status mkg_device_check(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return MKG_ERR_NO_DEVICE;
    }
    return (major == 9 && minor == 0) ? MKG_OK : MKG_ERR_UNSUPPORTED_DEVICE;
}

/* The launch configuration of the shipped kernel: grid CTAs, clusters of cl along x
 * (cl > 1), programmatic stream serialization when flags hold MKG_LAUNCH_FLAG_PDL.
 * attr must have room for 2 attributes. */
static void mkg_launch_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *attr, int grid, int cl,
                              unsigned int flags, cudaStream_t stream)
{
    memset(cfg, 0, sizeof *cfg);
    memset(attr, 0, 2 * sizeof *attr);
    cfg->gridDim.x = (unsigned)grid;
    cfg->gridDim.y = cfg->gridDim.z = 1;
    cfg->blockDim.x = MKG_LAUNCH_THREADS;
    cfg->blockDim.y = cfg->blockDim.z = 1;
    cfg->dynamicSmemBytes = MKG_LAUNCH_SMEM_BYTES;
    cfg->stream = stream;
    cfg->attrs = attr;
    if (cl > 1) {
        attr[cfg->numAttrs].id = cudaLaunchAttributeClusterDimension;
        attr[cfg->numAttrs].val.clusterDim.x = (unsigned)cl;
        attr[cfg->numAttrs].val.clusterDim.y = 1;
        attr[cfg->numAttrs].val.clusterDim.z = 1;
        ++cfg->numAttrs;
    }
    if (flags & MKG_LAUNCH_FLAG_PDL) {
        attr[cfg->numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[cfg->numAttrs].val.programmaticStreamSerializationAllowed = 1;
        ++cfg->numAttrs;
    }
}

/* Clusters of schedule s's kernel that are resident at once (0 when the runtime
 * cannot say; the launch then trusts the grid it was given). */
static int mkg_cluster_fit(mkg_dtype t, int s, int cl)
{
    const void *k = mkg_kernel_sm90(t, s, MKG_KV_ONE);
    if (!k)
        k = mkg_kernel_sm90(t, s, MKG_KV_CHUNKED);    /* cluster split-K rows: chunked only */
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[2];
    mkg_launch_config(&cfg, attr, cl, cl, 0u, 0);
    int n = 0;
    if (!k || cudaOccupancyMaxActiveClusters(&n, k, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

static mkg_status mkg_prepare_kernels(mkg_dtype t)
{
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        for (int v = 0; v < MKG_KV_COUNT; ++v) {
            const void *k = mkg_kernel_sm90(t, s, v);
            if (!k)
                continue;                               /* rows that cannot fold chunks */
            if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, MKG_LAUNCH_SMEM_BYTES) !=
                cudaSuccess) {
                (void)cudaGetLastError();
                return MKG_ERR_CUDA;
            }
        }
    return MKG_OK;
}

mkg_status mkg_gemm_create(const mkg_gemm_desc *d, mkg_gemm_op **out)
{
    if (!out)
        return MKG_ERR_NULL_OUT;
    *out = NULL;
    mkg_status st = mkg_gemm_validate(d);
    if (st != MKG_OK)
        return st;
    st = mkg_device_check();
    if (st != MKG_OK)
        return st;

    mkg_nvtx_push("mkg_gemm_create");
    mkg_gemm_op *op = (mkg_gemm_op *)calloc(1, sizeof(*op));
    mkg_gemm_params *host = (mkg_gemm_params *)aligned_alloc(64, sizeof(mkg_gemm_params));
    if (!op || !host) {
        st = MKG_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    op->desc = *d;
    if (!d->workspace) {
        /* NOTE: sized for every schedule, so one op can run any row (benchmark, autotune). */
        op->desc.workspace_bytes = mkg_gemm_workspace_bytes(d);
        if (op->desc.workspace_bytes &&
            cudaMalloc(&op->owned_workspace, op->desc.workspace_bytes) != cudaSuccess) {
            st = MKG_ERR_OUT_OF_MEMORY;
            goto fail;
        }
        op->desc.workspace = op->owned_workspace;
    }
    if (op->desc.workspace &&
        cudaMemset(op->desc.workspace, 0, mkg_workspace_counter_bytes(d->m, d->n)) != cudaSuccess) {
        st = MKG_ERR_CUDA;
        goto fail;
    }
    st = mkg_gemm_encode_params(&op->desc, host);
    if (st != MKG_OK)
        goto fail;
    st = mkg_prepare_kernels(d->a_type);
    if (st != MKG_OK)
        goto fail;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&op->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        st = MKG_ERR_CUDA;
        goto fail;
    }
    for (int s = 0; s < MKG_SCHED_COUNT; ++s)
        if (mkg_schedule_get(s)->cluster > 1)
            op->cluster_fit[s] = mkg_cluster_fit(d->a_type, s, mkg_schedule_get(s)->cluster);
    if (cudaMalloc((void **)&op->dev, sizeof(mkg_gemm_params)) != cudaSuccess) {
        st = MKG_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    /* NOTE: a pageable cudaMemcpy may return before the bytes land; the sync makes the
     * params visible to kernels launched on any stream, non-blocking ones included. */
    if (cudaMemcpy(op->dev, host, sizeof(mkg_gemm_params), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaStreamSynchronize(0) != cudaSuccess) {
        st = MKG_ERR_CUDA;
        goto fail;
    }
    op->host = host;
    mkg_nvtx_pop();
    *out = op;
    return MKG_OK;

fail:
    (void)cudaGetLastError();
    if (op) {
        cudaFree(op->dev);
        cudaFree(op->owned_workspace);
    }
    free(op);
    free(host);
    mkg_nvtx_pop();
    return st;
}

int mkg_gemm_launch_grid(const mkg_gemm_op *op, int s, int grid)
{
    const mkg_schedule_info *info = mkg_schedule_get(s);
    if (!op || !info || grid < 0)
        return 0;
    const mkg_gemm_desc *d = &op->desc;
    const int units = mkg_schedule_units(s, d->m, d->n, d->k, d->kc);
    int g = grid == 0 ? op->sms : grid;
    if (g > units)
        g = units;
    const int cl = info->cluster;
    if (cl > 1) {
        /* NOTE: whole clusters (a grid of 7 runs as 4 clusters of 2), and no more than
         * fit at once (a persistent grid that does not fit would run its clusters one
         * after another). */
        g = mkg_ceil_div(g, cl) * cl;
        const int fit = op->cluster_fit[s];
        if (fit > 0 && g > fit * cl)
            g = fit * cl;
    }
    return g;
}

int mkg_gemm_cluster_fit(const mkg_gemm_op *op, int s)
{
    return op && s >= 0 && s < MKG_SCHED_COUNT ? op->cluster_fit[s] : 0;
}

/* The kernel variant (MKG_KV_*) that runs d. NOTE: block scales run the chunked kernel even
 * for one chunk: it scales each chunk. A plain store of the input's natural output type runs
 * the kernel compiled for only that epilogue, unless the flags ask for the generic one. */
static int mkg_kernel_variant(const mkg_gemm_desc *d, unsigned int flags)
{
    const int plain = d->epilogue == MKG_EPI_STORE && !d->deps.done && d->c_type == mkg_store_type(d->a_type) &&
                      !(flags & MKG_LAUNCH_FLAG_GENERIC_EPILOGUE);
    if (mkg_chunk_count(d->k, d->kc) > 1 || d->a_block_scales)
        return plain && !d->a_block_scales ? MKG_KV_CHUNKED_STORE : MKG_KV_CHUNKED;
    return plain ? MKG_KV_STORE : MKG_KV_ONE;
}

mkg_status mkg_gemm_launch(const mkg_gemm_op *op, int s, int grid, cudaStream_t stream)
{
    return mkg_gemm_launch_ex(op, s, grid, 0u, stream);
}

int mkg_launch_producers(void)
{
    static int producers = 0;
    if (!producers) {
        const char *e = getenv("MKG_PRODUCERS");
        const int v = e ? atoi(e) : 0;
        producers = v == 1 || v == 2 ? v : MKG_LAUNCH_PRODUCERS;
    }
    return producers;
}

mkg_status mkg_gemm_launch_ex(const mkg_gemm_op *op, int s, int grid, unsigned int flags, cudaStream_t stream)
{
    if (!op)
        return MKG_ERR_NULL_DESC;
    mkg_status st = mkg_schedule_check(&op->desc, s);
    if (st != MKG_OK)
        return st;
    /* The shipped kernels compile no fused epilogue or dependency count for rows with wgmma N > 128
     * (mkg_schedule_check lets megakernel layers of one chunk have them: MKG_DISPATCH_WIDE). */
    if (mkg_schedule_wgmma_n(s) > MKG_CHUNKED_MAX_WN &&
        (op->desc.epilogue != MKG_EPI_STORE || op->desc.deps.done))
        return MKG_ERR_SCHEDULE_INELIGIBLE;
    if (grid < 0)
        return MKG_ERR_BAD_GRID;
    if ((flags & ~(MKG_LAUNCH_FLAG_PDL | MKG_LAUNCH_FLAG_GENERIC_EPILOGUE)) != 0u)
        return MKG_ERR_BAD_FLAGS;
    const mkg_gemm_desc *d = &op->desc;
    if (mkg_schedule_workspace_bytes(s, d->m, d->n, d->k, d->kc) > (d->workspace ? d->workspace_bytes : 0))
        return MKG_ERR_WORKSPACE_TOO_SMALL;
    const mkg_schedule_info *info = mkg_schedule_get(s);
    const int g = mkg_gemm_launch_grid(op, s, grid);

    int raster = info->raster, group = info->group, split = info->split, producers = mkg_launch_producers();
    void *args[5] = {(void *)op->host, (void *)&raster, (void *)&group, (void *)&split, (void *)&producers};
    const void *kernel = mkg_kernel_sm90(d->a_type, s, mkg_kernel_variant(d, flags));
    if (!kernel)
        return MKG_ERR_SCHEDULE_INELIGIBLE;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[2];
    mkg_launch_config(&cfg, attr, g, info->cluster, flags, stream);
    if (cudaLaunchKernelExC(&cfg, kernel, args) != cudaSuccess) {
        (void)cudaGetLastError();
        return MKG_ERR_CUDA;
    }
    return MKG_OK;
}

const mkg_gemm_params *mkg_gemm_device_params(const mkg_gemm_op *op)
{
    return op ? op->dev : NULL;
}

void mkg_gemm_destroy(mkg_gemm_op *op)
{
    if (!op)
        return;
    cudaFree(op->dev);
    cudaFree(op->owned_workspace);
    free(op->host);
    free(op);
}

mkg_status mkg_gemm(const mkg_gemm_desc *d, int s, cudaStream_t stream)
{
    mkg_status st = mkg_gemm_validate(d);
    if (st != MKG_OK)
        return st;
    st = mkg_schedule_check(d, s);
    if (st != MKG_OK)
        return st;
    mkg_gemm_op *op = NULL;
    st = mkg_gemm_create(d, &op);
    if (st != MKG_OK)
        return st;
    mkg_nvtx_push("mkg_gemm_launch");
    st = mkg_gemm_launch(op, s, 0, stream);
    if (st == MKG_OK && cudaStreamSynchronize(stream) != cudaSuccess) {
        (void)cudaGetLastError();
        st = MKG_ERR_CUDA;
    }
    mkg_nvtx_pop();
    mkg_gemm_destroy(op);
    return st;
}
