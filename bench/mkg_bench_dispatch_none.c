/* mkg_bench_dispatch_none.c - the dispatch entry points of mkg_bench_dispatch.h for a build
 * without the dispatch kernel (cmake -DMKG_BENCH_DISPATCH=OFF). That kernel instantiates every
 * schedule row for four dtypes and is by far the slowest part of the build; a GPU-machine run
 * that only measures the shipped kernel against cuBLASLt builds in a fraction of the time. */
#include "mkg_bench_dispatch.h"

int mkg_bench_dispatch_available(void)
{
    return 0;
}

int mkg_bench_dispatch_chunked_available(mkg_dtype dt)
{
    (void)dt;
    return 0;
}

int mkg_bench_dispatch_order(void)
{
    return 0;
}

cudaError_t mkg_bench_dispatch_init(void)
{
    return cudaSuccess;
}

cudaError_t mkg_bench_dispatch_launch(mkg_dtype dt, int chunked, const mkg_layer_dev *rows, int count,
                                      const int *m_cur, unsigned int *err, int layer, int grid, cudaStream_t stream)
{
    (void)dt, (void)chunked, (void)rows, (void)count, (void)m_cur, (void)err, (void)layer, (void)grid, (void)stream;
    return cudaErrorNotSupported;
}
