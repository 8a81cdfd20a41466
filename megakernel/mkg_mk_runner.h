/* mkg_mk_runner.h - runs the sample model both ways and compares them: the
 * megakernel (one launch per step) and the reference path (cuBLAS + plain kernels),
 * same weights, same inputs. Used by mkg_demo, the megakernel benchmark and the GPU
 * tests. Each case: fresh random x, reference step, megakernel step twice (the two
 * must be bitwise equal), errors against the reference, then both timed as CUDA-graph
 * replays, interleaved, next to the weight-bytes / copy-bandwidth floor.
 */
#ifndef MKG_MK_RUNNER_H
#define MKG_MK_RUNNER_H

#include <cuda_runtime_api.h>

#include "mkg_megakernel.h"
#include "mkg_reference_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mkg_mk_case {
    const char *phase;          /* "decode" or "prefill" */
    int tokens;                 /* decode: batch; prefill: tokens */
    int pos;                    /* decode: position of sequence 0 (sequence i at pos + 7 i); prefill: pos0 */
    int lm_head;
} mkg_mk_case;

typedef struct mkg_mk_result {
    mkg_status status;          /* MKG_OK, or why the megakernel step failed */
    unsigned int stall[4], dispatch_err;
    double x_rel_err;           /* max |mk - ref| / max |ref| over the hidden states */
    double logits_rel_err;      /* same over the logits (0 without the LM head) */
    int repeat_bitexact;        /* two megakernel runs wrote the same bits */
    double mkg_us, ref_graph_us;
    double floor_us;            /* bytes the step must read / copy bandwidth */
    double read_bytes;
} mkg_mk_result;

typedef struct mkg_mk_runner mkg_mk_runner;

/* Creates the model (weights from the seed), the megakernel and the reference path. */
int mkg_mk_runner_create(const mkg_model_config *c, mkg_mk_runner **out);
void mkg_mk_runner_destroy(mkg_mk_runner *r);
mkg_mk *mkg_mk_runner_mk(mkg_mk_runner *r);
mkg_model *mkg_mk_runner_model(mkg_mk_runner *r);
cudaStream_t mkg_mk_runner_stream(mkg_mk_runner *r);

/* Device-to-device copy bandwidth, TB/s (read + write bytes / time), measured now. */
double mkg_mk_runner_copy_tbps(mkg_mk_runner *r);

/* Runs one case; replays = 0 skips the timing. Returns 0 or a CUDA/cuBLAS error code. */
int mkg_mk_runner_case(mkg_mk_runner *r, const mkg_mk_case *c, int replays, mkg_mk_result *out);

/* Copies the logits row `row` of the last megakernel step to host (vocab bf16 values). */
int mkg_mk_runner_logits_row(mkg_mk_runner *r, int row, unsigned short *host);

/* Prepares a step's inputs: fresh x rows from seed, decode positions pos + 7 i, and (with the
 * LM head) the step's logits rows set to NaN, so that rows a step fails to write never compare equal. */
int mkg_mk_runner_inputs(mkg_mk_runner *r, const mkg_mk_case *c, unsigned long long seed);

#ifdef __cplusplus
}
#endif

#endif /* MKG_MK_RUNNER_H */
