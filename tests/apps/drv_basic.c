/* drv_basic: a direct driver-API user linked with -lcuda, on the legacy default stream. */
#include "drv_basic_body.h"
