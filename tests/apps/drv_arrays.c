/* drv_arrays: the driver API's array calls, legacy default stream (drv_arrays_body.h). */
#include "drv_arrays_body.h"
