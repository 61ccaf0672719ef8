# Installs the current build into a fresh prefix, builds examples/embedding against it with
# find_package(perfscope) and, separately, with pkg-config, and runs both programs: each must
# count exactly 100 minor faults in its "touch" region. The CMake build's profile_region (the
# sampling profiler, perfscope::analysis) must find samples in its heavy function.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... -DEXTRA_FLAGS=... -P this
foreach(variable BUILD_DIR SOURCE_DIR WORK_DIR CXX)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "${variable} is not set")
  endif()
endforeach()
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run_checked what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

function(check_example_output what output)
  if(EXTRA_FLAGS MATCHES "sanitize=address")
    # AddressSanitizer's checks of the stores fault in shadow pages as well: 100 pages have
    # 12.5 pages of shadow, which span 14 pages when they straddle a page boundary.
    set(expected "touch: minor-faults=1(0[0-9]|1[0-4])\n")
  else()
    set(expected "touch: minor-faults=100\n")
  endif()
  if(NOT output MATCHES "${expected}")
    message(FATAL_ERROR "${what}: expected 100 minor faults in 'touch', got:\n${output}")
  endif()
  if(NOT output MATCHES "region 'touch' \\(1 run")
    message(FATAL_ERROR "${what}: no table of the 'touch' region in:\n${output}")
  endif()
  if(NOT output MATCHES "compute,1,[0-9]+,task-clock,")
    message(FATAL_ERROR "${what}: no CSV line of the 'compute' region in:\n${output}")
  endif()
endfunction()

run_checked("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed include/perfscope/embed/counters.hpp lib/libperfscope.a
                  lib/cmake/perfscope/perfscopeConfig.cmake
                  lib/cmake/perfscope/perfscopeConfigVersion.cmake lib/pkgconfig/perfscope.pc
                  bin/perfscope)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "cmake --install did not install ${installed}")
  endif()
endforeach()

# find_package(perfscope) from the installed prefix only.
set(example_build ${WORK_DIR}/cmake-build)
run_checked("configuring examples/embedding" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/embedding
            -B ${example_build} -G Ninja -DCMAKE_PREFIX_PATH=${prefix}
            -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}"
            "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run_checked("building examples/embedding" ${CMAKE_COMMAND} --build ${example_build})
run_checked("running count_regions (CMake build)" ${example_build}/count_regions)
check_example_output("CMake build" "${last_output}")
# perfscope::analysis: the sampling profiler, linked with its libraries from the package.
run_checked("running profile_region (CMake build)" ${example_build}/profile_region)
if(NOT last_output MATCHES "profile_region: [1-9][0-9]* samples" OR
   NOT last_output MATCHES "heavy_part")
  message(FATAL_ERROR "profile_region: no samples in heavy_part:\n${last_output}")
endif()

# pkg-config: g++ $(pkg-config --cflags --libs perfscope), against the shared library when it
# was installed (rpath to find it), else the static one.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run_checked("pkg-config" ${PKG_CONFIG} --cflags --libs perfscope)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(extra UNIX_COMMAND "${EXTRA_FLAGS}")
run_checked("pkg-config build" ${CXX} ${extra} ${SOURCE_DIR}/examples/embedding/count_regions.cpp
            ${flags} -Wl,-rpath,${prefix}/lib -o ${WORK_DIR}/count_regions_pkg_config)
run_checked("running count_regions (pkg-config build)" ${WORK_DIR}/count_regions_pkg_config)
check_example_output("pkg-config build" "${last_output}")
message(STATUS "the installed package built and ran examples/embedding both ways")
