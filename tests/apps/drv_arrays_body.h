/* drv_arrays_body.h: the driver API's own CUDA-array calls (cudart reaches none of them: its array copies
 * are cuMemcpy3D), shared by drv_arrays.c (legacy default stream) and drv_arrays_ptds.c
 * (CUDA_API_PER_THREAD_DEFAULT_STREAM: the _ptds/_ptsz entry points): cuArrayCreate, the linear array
 * copies HtoA, AtoA, AtoD, DtoA, AtoH, HtoAAsync, AtoHAsync, a cuMemcpy2D out of an array, cuArrayDestroy.
 * The bytes really move on the simulated driver: the round trip is checked. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWidth = 1024 };               /* floats per row */
enum { kHeight = 512 };               /* rows: 2 MiB, so the blocking copies' time is mostly the copy's */
enum { kRowBytes = kWidth * 4 };
enum { kBytes = kRowBytes * kHeight };

#include "drv_check.h"

int main(void)
{
    static float in[kWidth * kHeight], out[kWidth * kHeight];
    for (int i = 0; i < kWidth * kHeight; ++i) in[i] = (float)i;
    CUdevice dev;
    CUcontext ctx;
    DCK(cuInit(0));
    DCK(cuDeviceGet(&dev, 0));
    DCK(cuCtxCreate(&ctx, NULL, 0, dev));
    CUDA_ARRAY_DESCRIPTOR desc;
    memset(&desc, 0, sizeof desc);
    desc.Width = kWidth;
    desc.Height = kHeight;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    CUarray a, b;
    DCK(cuArrayCreate(&a, &desc));
    DCK(cuArrayCreate(&b, &desc));
    CUdeviceptr buf;
    DCK(cuMemAlloc(&buf, kBytes));

    DCK(cuMemcpyHtoA(a, 0, in, kBytes));
    DCK(cuMemcpyAtoA(b, 0, a, 0, kBytes));
    DCK(cuMemcpyAtoD(buf, b, 0, kBytes));
    DCK(cuMemcpyDtoA(a, 0, buf, kBytes));
    DCK(cuMemcpyAtoH(out, a, 0, kBytes));
    if (memcmp(in, out, kBytes) != 0) {
        fprintf(stderr, "the round trip through the arrays changed the data\n");
        return 1;
    }

    void* pinned;
    DCK(cuMemAllocHost(&pinned, kBytes));
    memcpy(pinned, in, kBytes);
    CUstream s;
    DCK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    DCK(cuMemcpyHtoAAsync(b, 0, pinned, kBytes, s));
    DCK(cuMemcpyAtoHAsync(pinned, b, 0, kBytes, s));
    DCK(cuStreamSynchronize(s));

    /* The left half of every row of array a, to pageable memory. */
    CUDA_MEMCPY2D half;
    memset(&half, 0, sizeof half);
    half.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    half.srcArray = a;
    half.dstMemoryType = CU_MEMORYTYPE_HOST;
    half.dstHost = out;
    half.dstPitch = kRowBytes / 2;
    half.WidthInBytes = kRowBytes / 2;
    half.Height = kHeight;
    DCK(cuMemcpy2D(&half));
    if (out[kWidth / 2] != in[kWidth]) {
        fprintf(stderr, "the 2D copy out of the array did not pack the half rows\n");
        return 1;
    }

    DCK(cuStreamDestroy(s));
    DCK(cuMemFreeHost(pinned));
    DCK(cuMemFree(buf));
    DCK(cuArrayDestroy(b));
    DCK(cuArrayDestroy(a));
    DCK(cuCtxDestroy(ctx));
    printf("array copies ok: %d bytes\n", (int)kBytes);
    return 0;
}
