/* mkg_mk_graph.c - builds the megakernel's task list for one model (see mkg_mk_graph.h).
 *
 * Per layer L (tasks 7L .. 7L+6): attention norm, QKV GEMM, attention, O GEMM +
 * residual, FFN norm, gate/up GEMM + SiLU-mul, down GEMM + residual; then the final
 * norm and the LM head. Each task reads the output of the task named by dep.
 */
#include "mkg_mk_graph.h"

static mkg_mk_op mkg_mk_norm_op(int layer, int dep, const mkg_model_config *c, const void *x, const void *g, void *xn)
{
    mkg_mk_op op = {MKG_MK_NORM, layer, -1, dep, c->hidden, x, g, xn};
    return op;
}

static mkg_mk_op mkg_mk_gemm_op(int layer, int row, int dep, int out_cols)
{
    mkg_mk_op op = {MKG_MK_GEMM, layer, row, dep, out_cols, 0, 0, 0};
    return op;
}

void mkg_mk_graph_build(const mkg_model_config *c, const mkg_model *md, mkg_mk_op *ops)
{
    const int t_per_layer = 7;
    for (int l = 0; l < c->layers; ++l) {
        mkg_mk_op *t = ops + t_per_layer * l;
        const int b = t_per_layer * l;
        const void *attn_norm = md ? md->layer[l].attn_norm : 0;
        const void *ffn_norm = md ? md->layer[l].ffn_norm : 0;
        t[0] = mkg_mk_norm_op(l, l == 0 ? -1 : b - 1, c, md ? md->x : 0, attn_norm, md ? md->xn : 0);
        t[1] = mkg_mk_gemm_op(l, MKG_MK_GEMMS_PER_LAYER * l + MKG_MK_QKV, b + 0, mkg_model_qkv_n(c));
        t[2] = (mkg_mk_op){MKG_MK_ATTN, l, -1, b + 1, c->q_heads * c->head_dim, 0, 0, 0};
        t[3] = mkg_mk_gemm_op(l, MKG_MK_GEMMS_PER_LAYER * l + MKG_MK_O, b + 2, c->hidden);
        t[4] = mkg_mk_norm_op(l, b + 3, c, md ? md->x : 0, ffn_norm, md ? md->xn : 0);
        t[5] = mkg_mk_gemm_op(l, MKG_MK_GEMMS_PER_LAYER * l + MKG_MK_GATE_UP, b + 4, c->ffn);
        t[6] = mkg_mk_gemm_op(l, MKG_MK_GEMMS_PER_LAYER * l + MKG_MK_DOWN, b + 5, c->hidden);
    }
    const int f = t_per_layer * c->layers;
    ops[f] = mkg_mk_norm_op(c->layers, f - 1, c, md ? md->x : 0, md ? md->final_norm : 0, md ? md->xn : 0);
    ops[f + 1] = mkg_mk_gemm_op(c->layers, MKG_MK_GEMMS_PER_LAYER * c->layers, f, c->vocab);
}
