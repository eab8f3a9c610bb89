// tests/python/native_thread.c: what a C++ extension's own worker thread does in a Python program:
// copies on a thread the interpreter never saw (no Python thread state), through a cudaMemcpy the
// Python side hands over. Its stacks must be native, named after native_copy_loop (issue 18).
#include <pthread.h>
#include <stddef.h>

typedef int (*MemcpyFn)(void* dst, const void* src, size_t bytes, int kind);

struct Job {
    MemcpyFn copy;
    void *dst, *src;
    size_t bytes;
    int count, failed;
};

static void* native_copy_loop(void* arg)
{
    struct Job* job = arg;
    for (int i = 0; i < job->count; ++i)
        if (job->copy(job->dst, job->src, job->bytes, 1) != 0) job->failed = 1;  // HtoD, pageable
    return NULL;
}

// Runs count copies on a new native thread and waits for it; 0 when all succeeded.
int copy_on_native_thread(MemcpyFn copy, void* dst, void* src, size_t bytes, int count)
{
    struct Job job = {copy, dst, src, bytes, count, 0};
    pthread_t thread;
    if (pthread_create(&thread, NULL, native_copy_loop, &job) != 0) return -1;
    pthread_join(thread, NULL);
    return job.failed;
}
