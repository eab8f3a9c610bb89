# tests/report/python.cmake: the report of a Python program (issue 18): tests/python/cuda_copies.py drives
# cudart and the driver API through ctypes on the simulated driver, in each of its modes, through
# run_report.sh like the C++ apps (findings' call sites named after the Python function, in
# tests/python, with a line), then check_lines.sh holds the exact lines in the report, the folded and the
# Perfetto export. Needs python3 and the simulated driver only, not the nvcc apps.
find_program(GPUSPY_PYTHON3 python3)
if(NOT GPUSPY_PYTHON3 OR NOT TARGET simcuda)
  return()
endif()
set(_py_src ${CMAKE_SOURCE_DIR}/tests/python)
set(_py_work ${CMAKE_CURRENT_BINARY_DIR}/runs)
set(_py_ldpath ${CMAKE_BINARY_DIR}/lib/simcuda:${CUDAToolkit_LIBRARY_DIR})
# mode (underscores for spaces in its arguments), the function that copies, its caller, whether the
# copies run under the module's own frame (the main thread, or a child forked from it).
foreach(case "main;to_device;step;outer" "threads;to_device;step;" "mp_spawn;to_device;step;" "mp_fork;to_device;step;outer"
             "driver;driver_to_device;driver_step;outer" "callback;to_device;callback_step;outer")
  list(GET case 0 _mode)
  list(GET case 1 _func)
  list(GET case 2 _caller)
  list(GET case 3 _outer)
  set(_args ${_mode})
  if(_mode MATCHES "^mp_")
    string(REPLACE "_" ";" _args ${_mode})
  endif()
  add_test(NAME report.python.${_mode}
           COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                   bash ${CMAKE_CURRENT_SOURCE_DIR}/run_report.sh ${_py_work}/python.${_mode} $<TARGET_FILE:${GPUSPY_CLI_TARGET}>
                   $<TARGET_FILE:report_vs_trace> ${CMAKE_CURRENT_SOURCE_DIR}/expect/python_${_mode}.txt ${_py_src}
                   -- ${GPUSPY_PYTHON3} ${_py_src}/cuda_copies.py ${_args})
  set_tests_properties(report.python.${_mode} PROPERTIES LABELS report TIMEOUT 600 FIXTURES_SETUP python_${_mode})
  add_test(NAME report.python.${_mode}.lines
           COMMAND bash ${_py_src}/check_lines.sh $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${_py_work}/python.${_mode} ${_func} ${_caller}
                   ${_outer})
  set_tests_properties(report.python.${_mode}.lines PROPERTIES LABELS report FIXTURES_REQUIRED python_${_mode})
endforeach()
# Through a package in a site-packages folder (tests/python/site-packages/gpukit): its frames are the
# library's, the site is the user's line (issue 28).
add_test(NAME report.python.package
         COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                 bash ${CMAKE_CURRENT_SOURCE_DIR}/run_report.sh ${_py_work}/python.package $<TARGET_FILE:${GPUSPY_CLI_TARGET}>
                 $<TARGET_FILE:report_vs_trace> ${CMAKE_CURRENT_SOURCE_DIR}/expect/python_package.txt ${_py_src}
                 -- ${GPUSPY_PYTHON3} ${_py_src}/cuda_copies.py package)
set_tests_properties(report.python.package PROPERTIES LABELS report TIMEOUT 600)
# 8 threads copying at once (their captures intern Python frames concurrently): no ground-truth check
# (concurrent blocking copies are the timeline's open case, see cuda_copies.py), the exact lines only.
add_test(NAME report.python.threads_free
         COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                 bash -c "rm -rf \"$2\" && mkdir -p \"$2\" && \"$0\" record --sim -o \"$2/capture.gspy\" -f -- \"$1\" \"$3\" threads_free > \"$2/record.out\" && bash \"$4\" \"$0\" \"$2\" to_device step"
                 $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${GPUSPY_PYTHON3} ${_py_work}/python.threads_free ${_py_src}/cuda_copies.py
                 ${_py_src}/check_lines.sh)
set_tests_properties(report.python.threads_free PROPERTIES LABELS report TIMEOUT 600)
# A C extension's own thread (native_thread.c) copies: native frames as for a C++ program, the call
# site in native_thread.c; the shim's notice counts those captures as without a Python thread state.
add_library(gpuspy_py_native MODULE ${_py_src}/native_thread.c)
target_compile_options(gpuspy_py_native PRIVATE -g -O0 -fno-omit-frame-pointer)
target_link_libraries(gpuspy_py_native PRIVATE Threads::Threads)
# Not named libgpuspy*: the report takes such frames for gpuspy's own.
set_target_properties(gpuspy_py_native PROPERTIES OUTPUT_NAME native_thread LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/python)
add_test(NAME report.python.native_thread
         COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                 bash ${CMAKE_CURRENT_SOURCE_DIR}/run_report.sh ${_py_work}/python.native_thread $<TARGET_FILE:${GPUSPY_CLI_TARGET}>
                 $<TARGET_FILE:report_vs_trace> ${CMAKE_CURRENT_SOURCE_DIR}/expect/python_native_thread.txt ${_py_src}
                 -- ${GPUSPY_PYTHON3} ${_py_src}/cuda_copies.py native_thread $<TARGET_FILE:gpuspy_py_native>)
set_tests_properties(report.python.native_thread PROPERTIES LABELS report TIMEOUT 600 FIXTURES_SETUP python_native_thread)
add_test(NAME report.python.native_thread.notice
         COMMAND bash -c "grep -E 'Notice code=1 \"python: [0-9]+ stacks with Python frames .*; [1-9][0-9]* on threads without a Python thread state' \"$0/dump.txt\""
                 ${_py_work}/python.native_thread)
set_tests_properties(report.python.native_thread.notice PROPERTIES LABELS report FIXTURES_REQUIRED python_native_thread)
# The distribution's interpreter too, where it is another one than python3 on the PATH (a pyenv build
# links libpython3.x.so; Debian's python3 has the interpreter in the executable itself).
find_program(GPUSPY_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(GPUSPY_SYSTEM_PYTHON3)
  file(REAL_PATH ${GPUSPY_SYSTEM_PYTHON3} _system_py)
  execute_process(COMMAND ${GPUSPY_PYTHON3} -c "import sys; print(sys.executable)" OUTPUT_VARIABLE _path_py
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_path_py)
    file(REAL_PATH ${_path_py} _path_py)
  endif()
  if(NOT _system_py STREQUAL _path_py)
    add_test(NAME report.python.system_main
             COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                     bash ${CMAKE_CURRENT_SOURCE_DIR}/run_report.sh ${_py_work}/python.system_main $<TARGET_FILE:${GPUSPY_CLI_TARGET}>
                     $<TARGET_FILE:report_vs_trace> ${CMAKE_CURRENT_SOURCE_DIR}/expect/python_main.txt ${_py_src}
                     -- ${GPUSPY_SYSTEM_PYTHON3} ${_py_src}/cuda_copies.py main)
    set_tests_properties(report.python.system_main PROPERTIES LABELS report TIMEOUT 600 FIXTURES_SETUP python_system_main)
    add_test(NAME report.python.system_main.lines
             COMMAND bash ${_py_src}/check_lines.sh $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${_py_work}/python.system_main to_device step
                     outer)
    set_tests_properties(report.python.system_main.lines PROPERTIES LABELS report FIXTURES_REQUIRED python_system_main)
  endif()
endif()
# Code objects freed and made again at the same addresses: every call still names its own line.
add_test(NAME report.python.code_churn
         COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                 bash ${_py_src}/check_churn.sh $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${GPUSPY_PYTHON3} ${_py_work}/python.code_churn 300)
set_tests_properties(report.python.code_churn PROPERTIES LABELS report TIMEOUT 600)
# Stacks whose native depth to the outermost Python frame changes from call to call: the same stacks
# with the per-thread depth hint as without, each rooted at the module's frame.
add_test(NAME report.python.depths
         COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                 bash ${_py_src}/check_depths.sh $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${GPUSPY_PYTHON3} ${_py_work}/python.depths 200)
set_tests_properties(report.python.depths PROPERTIES LABELS report TIMEOUT 600)
# Every CPython minor version the shim knows (shim/python_layouts.h), where pyenv has one
# ($PYENV_ROOT/versions/3.N.*, or ~/.pyenv): its row checked against its own headers
# (report.python.layout.3.N: offsetof, compiled at test time), and the main and threads cases run on it
# (report.python.3.N.main, report.python.3.N.threads, each with .lines, and main.layout_used: the shim's
# notice names that version's row; the full set runs on python3 above). pyenv links libpython3.N.so, the distribution's python3 has the interpreter in its executable:
# the shim finds it by dlsym either way. The distribution's headers are checked too where installed.
# The line-table reader (shim/python_lines.cpp) on its own, held against each interpreter's own line of
# every code unit (report.python.line_tables.*: check_line_tables.py).
add_executable(gpuspy_py_lines ${_py_src}/line_table_tool.cpp ${CMAKE_SOURCE_DIR}/shim/python_lines.cpp)
target_include_directories(gpuspy_py_lines PRIVATE ${CMAKE_SOURCE_DIR})
add_test(NAME report.python.line_tables.python3
         COMMAND ${GPUSPY_PYTHON3} ${_py_src}/check_line_tables.py $<TARGET_FILE:gpuspy_py_lines>)
if(GPUSPY_SYSTEM_PYTHON3 AND NOT _system_py STREQUAL _path_py)
  add_test(NAME report.python.line_tables.system
           COMMAND ${GPUSPY_SYSTEM_PYTHON3} ${_py_src}/check_line_tables.py $<TARGET_FILE:gpuspy_py_lines>)
endif()
execute_process(COMMAND ${GPUSPY_PYTHON3} -c "import sys; print('%d.%d' % sys.version_info[:2])"
                OUTPUT_VARIABLE _path_minor OUTPUT_STRIP_TRAILING_WHITESPACE)
set(_pyenv_root $ENV{PYENV_ROOT})
if(NOT _pyenv_root)
  set(_pyenv_root $ENV{HOME}/.pyenv)
endif()
foreach(_minor 9 10 11 12 13)
  set(_ver 3.${_minor})
  file(GLOB _dirs LIST_DIRECTORIES true ${_pyenv_root}/versions/${_ver}.*)
  set(_found "")
  foreach(_dir IN LISTS _dirs)
    # 3.N.M only: not a free-threaded 3.13t (another object header: the shim keeps native stacks there).
    if(_dir MATCHES "/${_ver}\\.[0-9]+$" AND EXISTS ${_dir}/bin/python${_ver} AND EXISTS ${_dir}/include/python${_ver}/Python.h)
      set(_found ${_dir})
    endif()
  endforeach()
  if(NOT _found)
    message(STATUS "gpuspy: no pyenv Python ${_ver} under ${_pyenv_root}/versions: its Python report tests are skipped")
    continue()
  endif()
  add_test(NAME report.python.layout.${_ver}
           COMMAND bash ${_py_src}/check_layout.sh ${CMAKE_C_COMPILER} ${CMAKE_SOURCE_DIR} ${_found}/include/python${_ver}
                   ${_py_work}/layout.${_ver})
  if(_ver STREQUAL _path_minor)
    continue()
  endif()
  add_test(NAME report.python.line_tables.${_ver}
           COMMAND ${_found}/bin/python${_ver} ${_py_src}/check_line_tables.py $<TARGET_FILE:gpuspy_py_lines>)
  foreach(case "main;outer" "threads;")
    list(GET case 0 _mode)
    list(GET case 1 _outer)
    set(_name python.${_ver}.${_mode})
    add_test(NAME report.${_name}
             COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                     bash ${CMAKE_CURRENT_SOURCE_DIR}/run_report.sh ${_py_work}/${_name} $<TARGET_FILE:${GPUSPY_CLI_TARGET}>
                     $<TARGET_FILE:report_vs_trace> ${CMAKE_CURRENT_SOURCE_DIR}/expect/python_${_mode}.txt ${_py_src}
                     -- ${_found}/bin/python${_ver} ${_py_src}/cuda_copies.py ${_mode})
    set_tests_properties(report.${_name} PROPERTIES LABELS report TIMEOUT 600 FIXTURES_SETUP ${_name})
    add_test(NAME report.${_name}.lines
             COMMAND bash ${_py_src}/check_lines.sh $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${_py_work}/${_name} to_device step
                     ${_outer})
    set_tests_properties(report.${_name}.lines PROPERTIES LABELS report FIXTURES_REQUIRED ${_name})
  endforeach()
  add_test(NAME report.python.${_ver}.depths
           COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                   bash ${_py_src}/check_depths.sh $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${_found}/bin/python${_ver}
                   ${_py_work}/python.${_ver}.depths 200)
  set_tests_properties(report.python.${_ver}.depths PROPERTIES LABELS report TIMEOUT 600)
  # The shim read this interpreter by its own version's row.
  add_test(NAME report.python.${_ver}.main.layout_used
           COMMAND grep -q "Notice code=1 \"python: .*; read by the CPython ${_ver} frame layout\"" ${_py_work}/python.${_ver}.main/dump.txt)
  set_tests_properties(report.python.${_ver}.main.layout_used PROPERTIES LABELS report FIXTURES_REQUIRED python.${_ver}.main)
endforeach()
# The newest pyenv CPython older than any the shim knows: native stacks only, said on stderr.
foreach(_ver 3.8 3.7 3.6)
  file(GLOB _old ${_pyenv_root}/versions/${_ver}.*/bin/python${_ver})
  if(_old)
    list(GET _old 0 _old)
    add_test(NAME report.python.unknown_version
             COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${_py_ldpath}
                     bash ${_py_src}/check_unknown.sh $<TARGET_FILE:${GPUSPY_CLI_TARGET}> ${_old} ${_py_src}/cuda_copies.py
                     ${_py_work}/python.unknown_version)
    set_tests_properties(report.python.unknown_version PROPERTIES LABELS report TIMEOUT 600)
    break()
  endif()
endforeach()
foreach(_inc /usr/include/python3.9 /usr/include/python3.10 /usr/include/python3.11 /usr/include/python3.12
             /usr/include/python3.13)
  # Where the -dev package has the headers the frame structs are in (3.11+: its internal ones).
  get_filename_component(_name ${_inc} NAME)
  if(EXISTS ${_inc}/Python.h AND (EXISTS ${_inc}/internal/pycore_frame.h OR _name MATCHES "^python3\\.(9|10)$"))
    add_test(NAME report.python.layout.system_${_name}
             COMMAND bash ${_py_src}/check_layout.sh ${CMAKE_C_COMPILER} ${CMAKE_SOURCE_DIR} ${_inc} ${_py_work}/layout.system_${_name})
  endif()
endforeach()
