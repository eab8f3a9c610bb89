/* drv_arrays_ptds: drv_arrays with the per-thread default stream: cuda.h names the _ptds/_ptsz entry
 * points, which are what this program links against. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include "drv_arrays_body.h"
