# tests/apps/sim_env.cmake: gpuspy_sim_env(PROGRAM OUT_VAR) sets OUT_VAR to the KEY=VALUE list that
# tests/apps/sim_env.txt gives PROGRAM (empty if it lists none), for `cmake -E env` in a test command.
set(GPUSPY_SIM_ENV_FILE ${CMAKE_CURRENT_LIST_DIR}/sim_env.txt)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${GPUSPY_SIM_ENV_FILE})

function(gpuspy_sim_env program out)
  file(STRINGS ${GPUSPY_SIM_ENV_FILE} _lines REGEX "^${program}[ \t]")
  list(LENGTH _lines _n)
  if(_n GREATER 1)
    message(FATAL_ERROR "${GPUSPY_SIM_ENV_FILE}: ${program} is listed ${_n} times")
  endif()
  set(_env)
  if(_n EQUAL 1)
    string(REGEX REPLACE "^${program}[ \t]+" "" _words "${_lines}")
    separate_arguments(_env UNIX_COMMAND "${_words}")
  endif()
  set(${out} ${_env} PARENT_SCOPE)
endfunction()
