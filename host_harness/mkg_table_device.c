/* mkg_table_device.c - builds the layer table in device memory: one mkg_layer_dev
 * row per layer (params encoded for m_max rows, one schedule per M bucket), the
 * current M of every layer, and the error word device code writes on a bad entry.
 * Everything is uploaded once; per step only the M values change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mkg_layer.h"
#include "mkg_nvtx.h"

struct mkg_table {
    int count;
    int *m_max;                 /* host copy, for mkg_table_set_m */
    mkg_layer_dev *rows;        /* device */
    int *m;                     /* device */
    unsigned int *error;        /* device */
    void **workspaces;          /* device, one per layer that needs one (split rows) */
};

static mkg_status mkg_fill_row(const mkg_layer_desc *l, const mkg_layer_plan *plan, mkg_layer_dev *row,
                               void **workspace)
{
    mkg_gemm_desc d = mkg_layer_gemm_desc(l, l->m_max, plan->kc);
    /* NOTE: d.kc, not plan->kc: a caller's plan may say kc 0 for a block-scaled layer, which is its
     * 128-deep block (mkg_layer_gemm_desc); sized with 0, the split rows got no workspace. */
    const int kc = d.kc;
    *workspace = NULL;
    /* Partials for the split schedules the plan actually uses, at their buckets' M
     * (covering every schedule at m_max would be hundreds of MB for wide layers). */
    size_t part = 0;
    for (int b = 0; b < plan->buckets && b < MKG_MAX_BUCKETS; ++b) {
        const int mb = mkg_bucket_upper(b) < l->m_max ? mkg_bucket_upper(b) : l->m_max;
        const size_t w = mkg_schedule_workspace_bytes(plan->schedule[b], mb, l->n, l->k, kc);
        if (w && w - mkg_workspace_counter_bytes(mb, l->n) > part)
            part = w - mkg_workspace_counter_bytes(mb, l->n);
    }
    const size_t ws = part ? mkg_workspace_counter_bytes(d.m, d.n) + part : 0;
    if (ws) {
        if (cudaMalloc(workspace, ws) != cudaSuccess)
            return MKG_ERR_OUT_OF_MEMORY;
        if (cudaMemset(*workspace, 0, mkg_workspace_counter_bytes(d.m, d.n)) != cudaSuccess)
            return MKG_ERR_CUDA;
        d.workspace = *workspace;
        d.workspace_bytes = ws;
    }
    memset(row, 0, sizeof *row);
    mkg_status st = mkg_gemm_encode_params(&d, &row->params);
    if (st != MKG_OK)
        return st;
    row->m_max = l->m_max;
    row->buckets = plan->buckets;
    row->planned = 1;
    memcpy(row->schedule, plan->schedule, sizeof row->schedule);
    return MKG_OK;
}

mkg_status mkg_table_create(const mkg_layer_desc *layers, int count, const mkg_layer_plan *plans, mkg_table **out)
{
    if (!out)
        return MKG_ERR_NULL_OUT;
    *out = NULL;
    int bad;
    mkg_status st = mkg_layers_validate(layers, count, &bad);
    if (st != MKG_OK)
        return st;
    /* A caller's plans: every bucket's schedule must run its layer at the plan's KC (the
     * planner's own picks do by construction). The device pick checks only what it can
     * afford per launch; e.g. a two-sub-tile row on a KC of an odd number of 128-byte K tiles
     * would compute a different C there without an error. */
    for (int i = 0; plans && i < count; ++i) {
        const mkg_gemm_desc d = mkg_layer_gemm_desc(&layers[i], 1, plans[i].kc);
        for (int b = 0; b < plans[i].buckets && b < MKG_MAX_BUCKETS; ++b) {
            st = mkg_schedule_check(&d, plans[i].schedule[b]);
            if (st != MKG_OK)
                return st;
        }
    }
    st = mkg_device_check();
    if (st != MKG_OK)
        return st;

    mkg_nvtx_push("mkg_table_create");
    mkg_gpu_info g;
    memset(&g, 0, sizeof g);
    int dev = 0;
    struct cudaDeviceProp prop;
    mkg_table *t = (mkg_table *)calloc(1, sizeof *t);
    mkg_layer_plan *planned = (mkg_layer_plan *)calloc((size_t)count, sizeof *planned);
    mkg_layer_dev *rows = (mkg_layer_dev *)aligned_alloc(64, (size_t)count * sizeof *rows);
    int *m0 = (int *)calloc((size_t)count, sizeof *m0);
    if (t)
        t->m_max = m0;                  /* owned by t from here on */
    else
        free(m0);
    if (!t || !planned || !rows || !m0) {
        st = MKG_ERR_OUT_OF_MEMORY;
        goto done;
    }
    t->count = count;
    t->workspaces = (void **)calloc((size_t)count, sizeof(void *));
    if (!t->workspaces) {
        st = MKG_ERR_OUT_OF_MEMORY;
        goto done;
    }
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        st = MKG_ERR_CUDA;
        goto done;
    }
    snprintf(g.name, sizeof g.name, "%.95s", prop.name);
    g.sms = prop.multiProcessorCount;
    if (plans) {
        memcpy(planned, plans, (size_t)count * sizeof *planned);
    } else {
        mkg_nvtx_push("mkg_plan");
        const mkg_cost_model cm = mkg_cost_model_h200();
        st = mkg_layers_plan(&cm, layers, count, &g, planned);
        mkg_nvtx_pop();
        if (st != MKG_OK)
            goto done;
    }
    for (int i = 0; i < count; ++i) {
        st = mkg_fill_row(&layers[i], &planned[i], &rows[i], &t->workspaces[i]);
        if (st != MKG_OK)
            goto done;
        m0[i] = layers[i].m_max;
    }
    mkg_nvtx_push("mkg_upload");
    if (cudaMalloc((void **)&t->rows, (size_t)count * sizeof *rows) != cudaSuccess ||
        cudaMalloc((void **)&t->m, (size_t)count * sizeof(int)) != cudaSuccess ||
        cudaMalloc((void **)&t->error, sizeof(unsigned int)) != cudaSuccess) {
        mkg_nvtx_pop();
        st = MKG_ERR_OUT_OF_MEMORY;
        goto done;
    }
    if (cudaMemcpy(t->rows, rows, (size_t)count * sizeof *rows, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(t->m, m0, (size_t)count * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemset(t->error, 0, sizeof(unsigned int)) != cudaSuccess)
        st = MKG_ERR_CUDA;
    mkg_nvtx_pop();
done:
    free(planned);
    free(rows);
    if (st != MKG_OK) {
        (void)cudaGetLastError();
        mkg_table_destroy(t);
    } else {
        *out = t;
    }
    mkg_nvtx_pop();
    return st;
}

void mkg_table_destroy(mkg_table *t)
{
    if (!t)
        return;
    for (int i = 0; t->workspaces && i < t->count; ++i)
        cudaFree(t->workspaces[i]);
    cudaFree(t->rows);
    cudaFree(t->m);
    cudaFree(t->error);
    free(t->workspaces);
    free(t->m_max);
    free(t);
}

const mkg_layer_dev *mkg_table_rows(const mkg_table *t)
{
    return t ? t->rows : NULL;
}

int *mkg_table_m(const mkg_table *t)
{
    return t ? t->m : NULL;
}

unsigned int *mkg_table_error(const mkg_table *t)
{
    return t ? t->error : NULL;
}

int mkg_table_count(const mkg_table *t)
{
    return t ? t->count : 0;
}

mkg_status mkg_table_set_m(mkg_table *t, int layer, int m, cudaStream_t stream)
{
    if (!t)
        return MKG_ERR_TABLE_NOT_UPLOADED;
    if (layer < 0 || layer >= t->count)
        return MKG_ERR_BAD_LAYER;
    if (m < 1)
        return MKG_ERR_BAD_M;
    if (m > t->m_max[layer])
        return MKG_ERR_M_EXCEEDS_M_MAX;
    /* NOTE: a pageable source is staged by the runtime before the call returns. */
    return cudaMemcpyAsync(t->m + layer, &m, sizeof m, cudaMemcpyHostToDevice, stream) == cudaSuccess ? MKG_OK
                                                                                               : MKG_ERR_CUDA;
}

mkg_status mkg_table_take_error(mkg_table *t, unsigned int *word, cudaStream_t stream)
{
    if (!t)
        return MKG_ERR_TABLE_NOT_UPLOADED;
    if (!word)
        return MKG_ERR_NULL_OUT;
    if (cudaMemcpyAsync(word, t->error, sizeof *word, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
        cudaMemsetAsync(t->error, 0, sizeof(unsigned int), stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess)
        return MKG_ERR_CUDA;
    return MKG_OK;
}
