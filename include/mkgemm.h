/* mkgemm.h - umbrella header for the mkgemm host API.
 *
 * Brings the status codes, dtypes, schedule table, tile order and the GEMM
 * descriptor/launch API. Device code includes device/mkg_gemm_sm90.cuh instead.
 */
#ifndef MKGEMM_H
#define MKGEMM_H

#define MKG_VERSION_MAJOR 0
#define MKG_VERSION_MINOR 1
#define MKG_VERSION_PATCH 0
#define MKG_VERSION_STRING "0.1.0"

#include "mkg_status.h"
#include "mkg_types.h"
#include "mkg_schedules.h"
#include "mkg_tile_order.h"
#include "mkg_gemm.h"
#include "mkg_plan.h"
#include "mkg_layer.h"

#endif /* MKGEMM_H */
