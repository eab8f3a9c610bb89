/* tests/shim/nvtx_app.c: NVTX ranges and marks only (no CUDA): with NVTX_INJECTION64_PATH pointing at
 * libgpuspy.so, NVTX loads the shim and every call below must reach the capture. Prints what NVTX
 * returned, which must not change under the shim's injection except the push/pop levels it reports. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

int main(void)
{
    nvtxMarkA("start");
    for (int i = 0; i < 3; ++i) {
        nvtxRangePushA("step");
        nvtxRangePushA("inner");
        nvtxRangePop();
        nvtxRangePop();
    }
    nvtxRangeId_t r = nvtxRangeStartA("load");
    nvtxRangeEnd(r);
    nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "domain range";
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
    nvtxDomainMarkEx(d, &a);
    printf("nvtx_app done\n");
    return 0;
}
