/* drv_memops: stream memory operations as NVIDIA's libraries use them to order streams. Each round,
 * stream `waiter` clears a buffer, then waits (cuStreamWaitValue32/64, or a cuStreamBatchMemOp wait) on a
 * flag the host has not yet had `writer` write, then clears a second buffer; the host works for kHostUs
 * while the GPU has nothing to run, then `writer` writes the flag (cuStreamWriteValue32/64, or a batch
 * write) and the host synchronizes the waiter. One condition per round: GEQ, EQ (64 bits), AND, NOR.
 * A last round writes first (behind a long memset on `writer`) and waits after, and a final one waits on
 * pinned host memory the host itself stores to. The GPU idles for the host's work: a profiler must not
 * count the wait as GPU busy time. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBytes = 1024 * 1024 };      /* each memset: ~1.7 us at the simulated 1.5 bytes/ns */
enum { kLongBytes = 16 * 1024 * 1024 };
enum { kHostUs = 40000 };     /* the host's work while the waiter is held: most of the run */
enum { kRounds = 4 };

#include "drv_check.h"

/* The host's own work: the GPU has nothing queued meanwhile but the held stream's memset. */
static void hostWork(void)
{
    struct timespec ts = {0, kHostUs * 1000L};
    nanosleep(&ts, NULL);
}

static void waitOn(CUstream s, CUdeviceptr flag, int round)
{
    CUstreamBatchMemOpParams op;
    switch (round) {
    case 0: DCK(cuStreamWaitValue32(s, flag, 1, CU_STREAM_WAIT_VALUE_GEQ)); break;
    case 1: DCK(cuStreamWaitValue64(s, flag, 0x200000000ull, CU_STREAM_WAIT_VALUE_EQ)); break;
    case 2:
        memset(&op, 0, sizeof op);
        op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        op.waitValue.address = flag;
        op.waitValue.value = 0x4;
        op.waitValue.flags = CU_STREAM_WAIT_VALUE_AND;
        DCK(cuStreamBatchMemOp(s, 1, &op, 0));
        break;
    default: DCK(cuStreamWaitValue32(s, flag, 0xFFFFFFFAu, CU_STREAM_WAIT_VALUE_NOR)); break;
    }
}

static void writeFor(CUstream s, CUdeviceptr flag, int round)
{
    CUstreamBatchMemOpParams op;
    switch (round) {
    case 0: DCK(cuStreamWriteValue32(s, flag, 1, 0)); break;
    case 1: DCK(cuStreamWriteValue64(s, flag, 0x200000000ull, 0)); break;
    case 2:
        memset(&op, 0, sizeof op);
        op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        op.writeValue.address = flag;
        op.writeValue.value = 0x5;
        DCK(cuStreamBatchMemOp(s, 1, &op, 0));
        break;
    default: DCK(cuStreamWriteValue32(s, flag, 0xFFFFFFFEu, 0)); break;
    }
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    DCK(cuInit(0));
    DCK(cuDeviceGet(&dev, 0));
    DCK(cuCtxCreate(&ctx, NULL, 0, dev));
    CUdeviceptr a, b, big, flag;
    DCK(cuMemAlloc(&a, kBytes));
    DCK(cuMemAlloc(&b, kBytes));
    DCK(cuMemAlloc(&big, kLongBytes));
    DCK(cuMemAlloc(&flag, 8));
    DCK(cuMemsetD32(flag, 0, 2));
    CUstream waiter, writer;
    DCK(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING));
    DCK(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));

    for (int round = 0; round < kRounds; ++round) {
        DCK(cuMemsetD8Async(a, (unsigned char)round, kBytes, waiter));
        waitOn(waiter, flag, round);
        DCK(cuMemsetD8Async(b, (unsigned char)round, kBytes, waiter));
        hostWork();
        writeFor(writer, flag, round);
        DCK(cuStreamSynchronize(waiter));
        DCK(cuStreamSynchronize(writer));
    }

    /* Written first, behind a long memset; the wait finds the value there, its stream still follows the write. */
    DCK(cuMemsetD8Async(big, 1, kLongBytes, writer));
    DCK(cuStreamWriteValue32(writer, flag, 7, 0));
    DCK(cuStreamWaitValue32(waiter, flag, 7, CU_STREAM_WAIT_VALUE_EQ));
    DCK(cuMemsetD8Async(a, 9, kBytes, waiter));
    DCK(cuCtxSynchronize());

    /* The host stores the value itself. */
    void* hostFlag;
    DCK(cuMemAllocHost(&hostFlag, 8));
    *(volatile unsigned*)hostFlag = 0;
    CUdeviceptr hostFlagDev;
    DCK(cuMemHostGetDevicePointer(&hostFlagDev, hostFlag, 0));
    DCK(cuStreamWaitValue32(waiter, hostFlagDev, 1, CU_STREAM_WAIT_VALUE_GEQ));
    DCK(cuMemsetD8Async(b, 10, kBytes, waiter));
    hostWork();
    *(volatile unsigned*)hostFlag = 1;
    DCK(cuStreamSynchronize(waiter));

    unsigned check = 0;
    DCK(cuMemcpyDtoH(&check, flag, 4));
    if (check != 7) {
        fprintf(stderr, "the flag reads %u, not the 7 last written\n", check);
        return 1;
    }
    printf("drv_memops: %d rounds of wait/write, 1 written first, 1 host store\n", kRounds);
    DCK(cuCtxDestroy(ctx));
    return 0;
}
