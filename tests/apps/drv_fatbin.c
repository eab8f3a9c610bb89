/* drv_fatbin: embeds the fatbin built from drv_kernel.cu (path in DRV_FATBIN_PATH) as drv_fatbin[], aligned
 * as cuModuleLoadData requires. */
#include "drv_fatbin.h"

#ifndef DRV_FATBIN_PATH
#error "DRV_FATBIN_PATH must name the fatbin to embed"
#endif

__asm__(".section .rodata\n"
        ".balign 64\n"
        ".globl drv_fatbin\n"
        ".type drv_fatbin, @object\n"
        "drv_fatbin:\n"
        ".incbin \"" DRV_FATBIN_PATH "\"\n"
        ".byte 0\n"
        ".previous\n");
