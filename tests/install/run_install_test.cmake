# Installs a pipeprof build into a fresh prefix, configures and builds tests/install/consumer
# against it (find_package(pipeprof)), and runs the consumer. Run with cmake -P:
#   cmake -DPIPEPROF_BUILD_DIR=<build> -DCONSUMER_SOURCE_DIR=<src> -DWORK_DIR=<scratch>
#         [-DCONSUMER_GENERATOR=Ninja] [-DCONSUMER_CXX_COMPILER=c++] [-DCONSUMER_CXX_LAUNCHER=ccache]
#         [-DTORCH_DIR=<dir of TorchConfig.cmake>] -P run_install_test.cmake
cmake_minimum_required(VERSION 3.22)

foreach(required PIPEPROF_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR)
  if(NOT ${required})
    message(FATAL_ERROR "run_install_test.cmake: pass -D${required}=<path>")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# run(<step> <command...>): runs a command and fails the test with its output when it fails.
function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "install test: ${step} failed (${result}):\n  ${ARGN}\n${output}")
  endif()
  set(last_output "${output}" PARENT_SCOPE)
endfunction()

run("install" "${CMAKE_COMMAND}" --install "${PIPEPROF_BUILD_DIR}" --prefix "${prefix}")
foreach(expected
    "include/pipeprof/core/schedule.h"
    "include/pipeprof/simulator/simulator.h"
    "include/pipeprof/runtime/pipe.h"
    "include/pipeprof/launch/local_run.h"
    "include/pipeprof/tuner/sweep.h"
    "libexec/pipeprof/pipeprof-rank")
  if(NOT EXISTS "${prefix}/${expected}")
    message(FATAL_ERROR "install test: ${prefix}/${expected} was not installed")
  endif()
endforeach()
file(GLOB_RECURSE config_files "${prefix}/*/pipeprofConfig.cmake")
if(NOT config_files)
  message(FATAL_ERROR "install test: no pipeprofConfig.cmake under ${prefix}")
endif()

set(configure_args -S "${CONSUMER_SOURCE_DIR}" -B "${consumer_build}" -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_PREFIX_PATH=${prefix}")
if(CONSUMER_GENERATOR)
  list(APPEND configure_args -G "${CONSUMER_GENERATOR}")
endif()
if(CONSUMER_CXX_COMPILER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}")
endif()
if(CONSUMER_CXX_LAUNCHER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${CONSUMER_CXX_LAUNCHER}")
endif()
if(TORCH_DIR)
  list(APPEND configure_args "-DTorch_DIR=${TORCH_DIR}")
endif()
run("configure consumer" "${CMAKE_COMMAND}" ${configure_args})
run("build consumer" "${CMAKE_COMMAND}" --build "${consumer_build}" --config Release)

set(consumer "${consumer_build}/pipeprof_consumer")
if(NOT EXISTS "${consumer}")
  set(consumer "${consumer_build}/Release/pipeprof_consumer")
endif()
run("run consumer" "${consumer}")
if(NOT last_output MATCHES "pipeprof consumer ok")
  message(FATAL_ERROR "install test: consumer printed no success line:\n${last_output}")
endif()
# Its ranks were the installed worker, found through the path compiled into the consumer.
string(FIND "${last_output}" "worker ${prefix}/libexec/pipeprof/pipeprof-rank" worker_at)
if(worker_at EQUAL -1)
  message(FATAL_ERROR "install test: the consumer's ranks did not run the installed pipeprof-rank:\n${last_output}")
endif()
message(STATUS "install test passed:\n${last_output}")
