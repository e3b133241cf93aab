# CTest `embed`: installs this build into a temporary prefix, builds examples/embed against the
# installed package with find_package(podsim) and runs it on configs/default.yaml.
# Run as: cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P embed_test.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed include/podsim/podsim/podsim.hpp include/podsim/run/simulate.hpp
                  lib/cmake/podsim/podsimConfig.cmake bin/podsim)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "not installed: ${installed}")
  endif()
endforeach()
if(EXISTS ${prefix}/include/podsim/config/yaml_reader.hpp)
  message(FATAL_ERROR "an internal header (yaml-cpp) was installed")
endif()

# The example sees only the installed package: not the source tree's sim/.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/embed -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/embed ${SOURCE_DIR}/configs/default.yaml training.global_batch=64)
message("${output}")
# default.yaml at global batch 64 (overridden), then doubled back to its own 128 in the RunSpec:
# that report must be the one `podsim run configs/default.yaml --format json` prints.
if(NOT output MATCHES "^gpt2-2b-fsdp-v4-8: global batch 64, step [0-9.]+ s, MFU 0\\.[0-9]+, peak HBM [0-9]+ bytes \\(fits\\)\n")
  message(FATAL_ERROR "unexpected first line")
endif()
string(FIND "${output}" "{" json_start)
string(SUBSTRING "${output}" ${json_start} -1 embedded_json)
string(JSON embedded_step GET "${embedded_json}" step_time_s)
run(${BUILD_DIR}/podsim run ${SOURCE_DIR}/configs/default.yaml --format json)
string(JSON cli_step GET "${output}" step_time_s)
if(NOT embedded_step STREQUAL cli_step)
  message(FATAL_ERROR "embedded step time ${embedded_step} s differs from podsim run's ${cli_step} s")
endif()
message("step time ${embedded_step} s, as podsim run")
file(REMOVE_RECURSE ${WORK_DIR})
