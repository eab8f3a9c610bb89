/* tests/python/check_layout.c: compiled against one CPython's own headers (Py_BUILD_CORE, for the frame
   structs) by check_layout.sh, compares shim/python_layouts.h's row for that minor version with offsetof;
   prints each field that differs and exits 1, or exits 0 where every one agrees. */
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif

#include "shim/python_layouts.h"

#include <stddef.h>
#include <stdio.h>

static int g_bad = 0;

static void expect(const char* what, uint32_t table, size_t actual)
{
    if (table == (uint32_t)actual) return;
    printf("python 3.%d %s: table says %u, the headers %zu\n", PY_MINOR_VERSION, what, table, actual);
    g_bad = 1;
}

int main(void)
{
    const struct GpuspyPyLayout* L = NULL;
    for (size_t i = 0; i < sizeof kGpuspyPyLayouts / sizeof kGpuspyPyLayouts[0]; ++i)
        if (kGpuspyPyLayouts[i].minor == PY_MINOR_VERSION) L = &kGpuspyPyLayouts[i];
    if (!L) {
        printf("python 3.%d: no row in shim/python_layouts.h\n", PY_MINOR_VERSION);
        return 1;
    }
#if PY_MINOR_VERSION <= 10
    expect("tstate->frame", L->tstateFrame, offsetof(PyThreadState, frame));
    expect("cframe (none)", L->cframeCurrent, GPUSPY_PY_NONE);
    expect("f_code", L->frameCode, offsetof(PyFrameObject, f_code));
    expect("f_back", L->framePrevious, offsetof(PyFrameObject, f_back));
    expect("f_lasti", L->frameInstr, offsetof(PyFrameObject, f_lasti));
    expect("is_entry (none)", L->frameIsEntry, GPUSPY_PY_NONE);
    expect("owner (none)", L->frameOwner, GPUSPY_PY_NONE);
    expect("f_lasti unit", L->lastiBytes, PY_MINOR_VERSION == 9 ? 1 : sizeof(_Py_CODEUNIT));
    expect("co_code_adaptive (none)", L->codeAdaptive, GPUSPY_PY_NONE);
    expect("co_name", L->codeName, offsetof(PyCodeObject, co_name));
#if PY_MINOR_VERSION == 9
    expect("co_lnotab", L->codeLinetable, offsetof(PyCodeObject, co_lnotab));
    expect("line table kind", L->lines, GPUSPY_PY_LNOTAB);
#else
    expect("co_linetable", L->codeLinetable, offsetof(PyCodeObject, co_linetable));
    expect("line table kind", L->lines, GPUSPY_PY_LINETABLE);
#endif
#else
#if PY_MINOR_VERSION <= 12
    expect("tstate->cframe", L->tstateFrame, offsetof(PyThreadState, cframe));
    expect("cframe->current_frame", L->cframeCurrent, offsetof(_PyCFrame, current_frame));
    expect("f_code", L->frameCode, offsetof(_PyInterpreterFrame, f_code));
    expect("prev_instr", L->frameInstr, offsetof(_PyInterpreterFrame, prev_instr));
#else
    expect("tstate->current_frame", L->tstateFrame, offsetof(PyThreadState, current_frame));
    expect("cframe (none)", L->cframeCurrent, GPUSPY_PY_NONE);
    expect("f_executable", L->frameCode, offsetof(_PyInterpreterFrame, f_executable));
    expect("instr_ptr", L->frameInstr, offsetof(_PyInterpreterFrame, instr_ptr));
#endif
    expect("previous", L->framePrevious, offsetof(_PyInterpreterFrame, previous));
#if PY_MINOR_VERSION == 11
    expect("is_entry", L->frameIsEntry, offsetof(_PyInterpreterFrame, is_entry));
    expect("owner (none)", L->frameOwner, GPUSPY_PY_NONE);
#else
    expect("is_entry (none)", L->frameIsEntry, GPUSPY_PY_NONE);
    expect("owner", L->frameOwner, offsetof(_PyInterpreterFrame, owner));
    expect("FRAME_OWNED_BY_CSTACK", GPUSPY_PY_FRAME_OWNED_BY_CSTACK, FRAME_OWNED_BY_CSTACK);
#endif
    expect("code unit size", sizeof(_Py_CODEUNIT), 2);
    expect("co_code_adaptive", L->codeAdaptive, offsetof(PyCodeObject, co_code_adaptive));
    expect("co_qualname", L->codeName, offsetof(PyCodeObject, co_qualname));
    expect("co_linetable", L->codeLinetable, offsetof(PyCodeObject, co_linetable));
    expect("line table kind", L->lines, GPUSPY_PY_LOCATIONS);
#endif
    expect("co_filename", L->codeFilename, offsetof(PyCodeObject, co_filename));
    expect("co_firstlineno", L->codeFirstLine, offsetof(PyCodeObject, co_firstlineno));
    expect("sizeof co_firstlineno", sizeof(((PyCodeObject*)0)->co_firstlineno), 4);
    expect("str state", L->strState, offsetof(PyASCIIObject, state));
    expect("compact ASCII data", L->strAsciiData, sizeof(PyASCIIObject));
    expect("compact data", L->strCompactData, sizeof(PyCompactUnicodeObject));
    expect("ob_type", GPUSPY_PY_OB_TYPE, offsetof(PyObject, ob_type));
    expect("bytes size", GPUSPY_PY_BYTES_SIZE, offsetof(PyVarObject, ob_size));
    expect("bytes data", GPUSPY_PY_BYTES_DATA, offsetof(PyBytesObject, ob_sval));
    expect("str length", GPUSPY_PY_STR_LENGTH, offsetof(PyASCIIObject, length));
    return g_bad;
}
