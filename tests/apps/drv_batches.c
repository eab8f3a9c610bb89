/* drv_batches: CUDA 13's batch entry points, driver API: cuMemcpy3DBatchAsync (pointer to pointer with
 * a pitched side, 3D device to device, device to pinned host, and through a CUDA array of 1-byte
 * elements, one copy per call) and cuMemPrefetchBatchAsync (two managed ranges to the device). The bytes
 * really move on the simulated driver: the round trip is checked. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWidth = 4096 };  /* bytes per row */
enum { kHeight = 64 };
enum { kDepth = 4 };
enum { kPitch = 8192 };  /* the pitched device side's row length */
enum { kIters = 5 };
enum { kManaged = 1 << 20 };

#include "drv_check.h"

static CUmemcpy3DOperand pointer(CUdeviceptr p, size_t rowLength)
{
    CUmemcpy3DOperand o;
    memset(&o, 0, sizeof o);
    o.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    o.op.ptr.ptr = p;
    o.op.ptr.rowLength = rowLength;
    return o;
}

static CUmemcpy3DOperand array(CUarray a)
{
    CUmemcpy3DOperand o;
    memset(&o, 0, sizeof o);
    o.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    o.op.array.array = a;
    return o;
}

/* One copy of width x height x depth elements, as a batch of one. */
static void copy(CUmemcpy3DOperand dst, CUmemcpy3DOperand src, size_t height, size_t depth, CUstream s)
{
    CUDA_MEMCPY3D_BATCH_OP op;
    memset(&op, 0, sizeof op);
    op.src = src;
    op.dst = dst;
    op.extent.width = kWidth;
    op.extent.height = height;
    op.extent.depth = depth;
    op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    DCK(cuMemcpy3DBatchAsync(1, &op, 0, s));
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    DCK(cuInit(0));
    DCK(cuDeviceGet(&dev, 0));
    DCK(cuCtxCreate(&ctx, NULL, 0, dev));
    CUstream s;
    DCK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    void *in, *out;
    DCK(cuMemAllocHost(&in, kWidth * kHeight));
    DCK(cuMemAllocHost(&out, kWidth * kHeight));
    for (int i = 0; i < kWidth * kHeight; ++i) ((unsigned char*)in)[i] = (unsigned char)(i * 7);
    CUdeviceptr pitched, cube, cube2;
    DCK(cuMemAlloc(&pitched, kPitch * kHeight));
    DCK(cuMemAlloc(&cube, kWidth * kHeight * kDepth));
    DCK(cuMemAlloc(&cube2, kWidth * kHeight * kDepth));
    CUDA_ARRAY3D_DESCRIPTOR desc;
    memset(&desc, 0, sizeof desc);
    desc.Width = kWidth;
    desc.Height = kHeight;
    desc.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    desc.NumChannels = 1;
    CUarray arr;
    DCK(cuArray3DCreate(&arr, &desc));

    for (int it = 0; it < kIters; ++it) {
        copy(pointer(pitched, kPitch), pointer((CUdeviceptr)in, 0), kHeight, 1, s);  /* HtoD, pitched */
        copy(pointer(cube, 0), pointer(pitched, kPitch), kHeight, 1, s);             /* DtoD */
        copy(pointer(cube2, 0), pointer(cube, 0), kHeight, kDepth, s);               /* DtoD, 3D */
        copy(array(arr), pointer(cube2, 0), kHeight, 1, s);                          /* DtoD into the array */
        copy(pointer((CUdeviceptr)out, 0), array(arr), kHeight, 1, s);               /* DtoH out of it */
    }
    DCK(cuStreamSynchronize(s));
    if (memcmp(in, out, kWidth * kHeight) != 0) {
        fprintf(stderr, "the round trip through the batches changed the data\n");
        return 1;
    }

    CUdeviceptr managed;
    DCK(cuMemAllocManaged(&managed, 2 * kManaged, CU_MEM_ATTACH_GLOBAL));
    CUdeviceptr ranges[2] = {managed, managed + kManaged};
    size_t sizes[2] = {kManaged, kManaged};
    CUmemLocation loc;
    memset(&loc, 0, sizeof loc);
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = 0;
    size_t locIdx = 0;
    for (int it = 0; it < kIters; ++it) DCK(cuMemPrefetchBatchAsync(ranges, sizes, 2, &loc, &locIdx, 1, 0, s));
    DCK(cuStreamSynchronize(s));
    printf("drv_batches: %d x 5 batched 3D copies, %d prefetch batches\n", kIters, kIters);
    DCK(cuCtxDestroy(ctx));
    return 0;
}
