/* mkg_nvtx.c - NVTX3 range helpers for the "mkgemm" domain. */
#include <nvtx3/nvToolsExt.h>

#include "mkg_nvtx.h"

// NOTE: the handle is created on first use and never changes afterwards; NVTX
// itself is a no-op until a tool (Nsight) injects, when the handle matters.
static nvtxDomainHandle_t mkg_nvtx_domain(void)
{
    static nvtxDomainHandle_t domain;
    if (!domain)
        domain = nvtxDomainCreateA("mkgemm");
    return domain;
}

void mkg_nvtx_push(const char *name)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    nvtxDomainRangePushEx(mkg_nvtx_domain(), &a);
}

void mkg_nvtx_pop(void)
{
    nvtxDomainRangePop(mkg_nvtx_domain());
}
