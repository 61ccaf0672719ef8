# Configures and builds perfscope with -DPERFSCOPE_LIBRARY_ONLY=ON in a fresh build directory, as
# a user who wants the counting/sampling library alone would: it must configure without looking
# for elfutils, protobuf or CLI11, build libperfscope.a and libperfscope.so, and the .so must
# export the public API (perfscope::Counters, ...) and hide the rest (fmt, the event-list parser's
# private classes). Then examples/embedding/count_regions, built against the .so alone, counts
# exactly 100 minor faults in its "touch" region.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... [-DGENERATOR=Ninja] -P this
foreach(variable SOURCE_DIR WORK_DIR CXX)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "${variable} is not set")
  endif()
endforeach()
if(NOT DEFINED GENERATOR)
  set(GENERATOR Ninja)
endif()
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run_checked what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# The build type the plain build defaults to; no other option than the one under test.
run_checked("configuring with PERFSCOPE_LIBRARY_ONLY=ON" ${CMAKE_COMMAND} -S ${SOURCE_DIR}
            -B ${build} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DPERFSCOPE_LIBRARY_ONLY=ON)
file(READ ${build}/CMakeCache.txt cache)
foreach(unwanted CLI11_DIR LIBELF_FOUND LIBDW_FOUND PROTOBUF_LITE_FOUND PERFSCOPE_PROTOC
                 GTest_DIR)
  if(cache MATCHES "\n${unwanted}[:=]")
    message(FATAL_ERROR "a library-only configure looked for ${unwanted}")
  endif()
endforeach()
run_checked("building the library-only configuration" ${CMAKE_COMMAND} --build ${build})
foreach(built libperfscope.a libperfscope.so include/perfscope/version.hpp)
  if(NOT EXISTS ${build}/${built})
    message(FATAL_ERROR "the library-only build made no ${built}")
  endif()
endforeach()
foreach(absent perfscope libperfscope_analysis.a)
  if(EXISTS ${build}/${absent})
    message(FATAL_ERROR "the library-only build made ${absent}, which needs the analysis layer")
  endif()
endforeach()

# What libperfscope.so exports.
find_program(NM nm REQUIRED)
run_checked("nm -D" ${NM} -D --defined-only -C ${build}/libperfscope.so)
set(exported "${last_output}")
foreach(wanted "perfscope::Counters::" "perfscope::parse_event_list(" "perfscope::CountingSession::"
               "typeinfo for perfscope::Error")
  string(FIND "${exported}" "${wanted}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "libperfscope.so does not export ${wanted}:\n${exported}")
  endif()
endforeach()
foreach(hidden " fmt::" "perfscope::event_grammar::")
  string(FIND "${exported}" "${hidden}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "libperfscope.so exports private symbols (${hidden}):\n${exported}")
  endif()
endforeach()
string(REGEX MATCHALL "\n[0-9a-f]+ [A-Za-z] " symbols "\n${exported}")
list(LENGTH symbols symbol_count)
message(STATUS "libperfscope.so exports ${symbol_count} symbols")

# A program against the .so alone: the headers, the generated ones, -lperfscope.
run_checked("building against libperfscope.so" ${CXX} -std=c++20
            ${SOURCE_DIR}/examples/embedding/count_regions.cpp
            -I${SOURCE_DIR}/include -I${build}/include -L${build} -lperfscope
            -Wl,-rpath,${build} -o ${WORK_DIR}/count_regions_shared)
run_checked("running against libperfscope.so" ${WORK_DIR}/count_regions_shared)
if(NOT last_output MATCHES "touch: minor-faults=100\n")
  message(FATAL_ERROR "expected 100 minor faults counted through libperfscope.so, got:\n"
                      "${last_output}")
endif()
message(STATUS "the library-only build configured, built and counted through libperfscope.so")
