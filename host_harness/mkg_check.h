/* mkg_check.h - the one runtime-check and one driver-check macro of the test
 * and benchmark programs (never used inside the library, which returns
 * mkg_status). On failure they print the call, file and line and exit(1).
 */
#ifndef MKG_CHECK_H
#define MKG_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

static inline void mkg_check_cuda(cudaError_t e, const char *what, const char *file, int line)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, cudaGetErrorString(e),
                cudaGetErrorName(e));
        exit(1);
    }
}

static inline void mkg_check_cu(CUresult r, const char *what, const char *file, int line)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s:%d: %s failed: CUresult %d\n", file, line, what, (int)r);
        exit(1);
    }
}

#define MKG_CUDA_CHECK(call) mkg_check_cuda((call), #call, __FILE__, __LINE__)
#define MKG_CU_CHECK(call) mkg_check_cu((call), #call, __FILE__, __LINE__)

#endif /* MKG_CHECK_H */
