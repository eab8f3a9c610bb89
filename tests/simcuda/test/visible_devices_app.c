/* What a process sees of the simulated devices under CUDA_VISIBLE_DEVICES (tests/simcuda/src/visible_devices.cpp),
 * printed one fact a line for test/visible_devices_test.cpp: cuInit's result, the device count, then for each
 * visible ordinal its name, PCI bus id (and the ordinal cuDeviceGetByPCIBusId gives back for it), UUID, total
 * memory, peer access to every other ordinal, and the ordinal a cuMemAlloc'd pointer on it reports; a 4 KiB
 * cuMemsetD8 on each device leaves a trace line (SIMCUDA_TRACE) naming both ordinals. */
#include <cuda.h>
#include <stdio.h>

#define CHECK(x)                                                                           \
    do {                                                                                   \
        CUresult r_ = (x);                                                                 \
        if (r_ != CUDA_SUCCESS) {                                                          \
            printf("error %s -> %d\n", #x, (int)r_);                                       \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void)
{
    CUresult rc = cuInit(0);
    printf("cuInit %d\n", (int)rc);
    if (rc != CUDA_SUCCESS) {
        int n = -1;
        printf("count_after_failed_init %d %d\n", (int)cuDeviceGetCount(&n), n);
        return 0;
    }
    int n = 0;
    CHECK(cuDeviceGetCount(&n));
    printf("count %d\n", n);
    CUdevice bad;
    printf("get_out_of_range %d\n", (int)cuDeviceGet(&bad, n));
    for (int i = 0; i < n; ++i) {
        CUdevice d;
        CHECK(cuDeviceGet(&d, i));
        char name[64], bus[32];
        CHECK(cuDeviceGetName(name, sizeof name, d));
        CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, d));
        CUdevice back = -1;
        CHECK(cuDeviceGetByPCIBusId(&back, bus));
        CUuuid u;
        CHECK(cuDeviceGetUuid_v2(&u, d));
        const unsigned char* b = (const unsigned char*)u.bytes;
        size_t mem = 0;
        CHECK(cuDeviceTotalMem(&mem, d));
        printf("dev %d name=\"%s\" bus=%s bus_ordinal=%d uuid=GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
               "%02x%02x%02x%02x%02x%02x mem=%zu peers=",
               i, name, bus, (int)back, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
               b[13], b[14], b[15], mem);
        for (int j = 0; j < n; ++j) {
            int can = -1;
            CHECK(cuDeviceCanAccessPeer(&can, d, j));
            printf("%d", can);
        }
        CUcontext ctx;
        CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
        CHECK(cuCtxSetCurrent(ctx));
        CUdeviceptr p;
        CHECK(cuMemAlloc(&p, 4096));
        int ordinal = -1;
        CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
        CHECK(cuMemsetD8(p, 7, 4096));
        CHECK(cuMemFree(p));
        printf(" ptr_ordinal=%d\n", ordinal);
    }
    return 0;
}
