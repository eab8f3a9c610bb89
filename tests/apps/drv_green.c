/* drv_green: green contexts as cuDNN uses them: an SM partition, a green context and its stream, ordered
 * against ordinary streams with the green context's own events. Each round the green stream clears a
 * buffer, then the green context waits (cuGreenCtxWaitEvent) for an event recorded on an ordinary stream
 * that is itself held by a cuStreamWaitValue32 the host has not yet had written; the green stream then
 * clears a second buffer. The host works for kHostUs while the GPU has nothing to run, then a third
 * stream writes the value. Then an event recorded on the green context (cuGreenCtxRecordEvent) orders
 * an ordinary stream's memset after the green work. A profiler must not count the held time as the
 * green stream's GPU time. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBytes = 1024 * 1024 };      /* each memset: ~1.7 us at the simulated 1.5 bytes/ns */
enum { kHostUs = 40000 };           /* the host's work while the green stream is held: most of the run */
enum { kRounds = 4 };

#include "drv_check.h"

static void hostWork(void)
{
    struct timespec ts = {0, kHostUs * 1000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    DCK(cuInit(0));
    DCK(cuDeviceGet(&dev, 0));
    DCK(cuCtxCreate(&ctx, NULL, 0, dev));

    CUdevResource all, part;
    unsigned groups = 1;
    DCK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    DCK(cuDevSmResourceSplitByCount(&part, &groups, &all, NULL, 0, 16));
    CUdevResourceDesc desc;
    DCK(cuDevResourceGenerateDesc(&desc, &part, 1));
    CUgreenCtx green;
    DCK(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CUstream greenStream;
    DCK(cuGreenCtxStreamCreate(&greenStream, green, CU_STREAM_NON_BLOCKING, 0));

    CUdeviceptr a, b, c, flag;
    DCK(cuMemAlloc(&a, kBytes));
    DCK(cuMemAlloc(&b, kBytes));
    DCK(cuMemAlloc(&c, kBytes));
    DCK(cuMemAlloc(&flag, 4));
    DCK(cuMemsetD32(flag, 0, 1));
    CUstream held, writer, after;
    DCK(cuStreamCreate(&held, CU_STREAM_NON_BLOCKING));
    DCK(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
    DCK(cuStreamCreate(&after, CU_STREAM_NON_BLOCKING));
    CUevent ready, greenDone;
    DCK(cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING));
    DCK(cuEventCreate(&greenDone, CU_EVENT_DISABLE_TIMING));

    for (int round = 0; round < kRounds; ++round) {
        DCK(cuMemsetD8Async(a, (unsigned char)round, kBytes, greenStream));
        DCK(cuStreamWaitValue32(held, flag, (cuuint32_t)round + 1, CU_STREAM_WAIT_VALUE_GEQ));
        DCK(cuEventRecord(ready, held));
        DCK(cuGreenCtxWaitEvent(green, ready));
        DCK(cuMemsetD8Async(b, (unsigned char)round, kBytes, greenStream));
        hostWork();
        DCK(cuStreamWriteValue32(writer, flag, (cuuint32_t)round + 1, 0));
        DCK(cuGreenCtxRecordEvent(green, greenDone));
        DCK(cuStreamWaitEvent(after, greenDone, 0));
        DCK(cuMemsetD8Async(c, (unsigned char)round, kBytes, after));
        DCK(cuStreamSynchronize(greenStream));
        DCK(cuStreamSynchronize(after));
    }
    DCK(cuCtxSynchronize());
    printf("drv_green: %d rounds of green-context waits and records\n", kRounds);
    DCK(cuStreamDestroy(greenStream));
    DCK(cuGreenCtxDestroy(green));
    DCK(cuCtxDestroy(ctx));
    return 0;
}
