/* drv_ptds: drv_basic with the per-thread default stream: the define makes cuda.h name the _ptsz/_ptds
 * entry points, which are what this program links against. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include "drv_basic_body.h"
