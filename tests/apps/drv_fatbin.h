/* drv_fatbin.h: the fatbin of drv_kernel.cu, embedded by drv_fatbin.c. */
#pragma once
extern const unsigned char drv_fatbin[];
