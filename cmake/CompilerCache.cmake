# Compiles through ccache when it is installed (scripts/install-deps installs it), so that a second
# clone of perfscope on the same machine, in any folder, reuses what the first one compiled.
#
# Why these settings:
# - base_dir = the source tree: ccache rewrites the absolute paths under it (source files, -I, the
#   unity batches' line markers) to relative ones before hashing, so /work/a and /tmp/b hash alike.
# - hash_dir off only for the targets perfscope_cache_across_clones() names (the libraries, the
#   tool, the tests, benchmarks and fuzzers): their debug information keeps the first clone's
#   working directory, which nothing reads back. The programs that the tests read DWARF source
#   lines from (examples/, the tests' workloads) keep ccache's default: each clone compiles its own,
#   so their DW_AT_comp_dir names files that exist.
# - sloppiness: the tests' precompiled header (pch_defines, time_macros), and include files whose
#   times change with every clone (include_file_mtime, include_file_ctime); contents still count.
# The settings travel on each command line through env, so a build started by hand (ninja in the
# build folder) caches exactly as one started by make.
# PERFSCOPE_CCACHE_BASE_DIR: the tree whose paths are made relative (the source tree, or the
# repository for the PMU lab's project in lab/).
option(PERFSCOPE_CCACHE "Compile through ccache when it is installed" ON)
if(NOT PERFSCOPE_CCACHE_BASE_DIR)
  set(PERFSCOPE_CCACHE_BASE_DIR ${PROJECT_SOURCE_DIR})
endif()
find_program(PERFSCOPE_CCACHE_PROGRAM ccache)
find_program(PERFSCOPE_ENV_PROGRAM env)
set(perfscope_cache_across_clones_launcher "")
if(PERFSCOPE_CCACHE AND PERFSCOPE_CCACHE_PROGRAM AND PERFSCOPE_ENV_PROGRAM
   AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(perfscope_ccache_settings
      CCACHE_BASEDIR=${PERFSCOPE_CCACHE_BASE_DIR}
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${PERFSCOPE_ENV_PROGRAM} ${perfscope_ccache_settings}
                                  ${PERFSCOPE_CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
  set(perfscope_cache_across_clones_launcher ${PERFSCOPE_ENV_PROGRAM} ${perfscope_ccache_settings}
                                             CCACHE_NOHASHDIR=true ${PERFSCOPE_CCACHE_PROGRAM})
  message(STATUS "Compiling through ${PERFSCOPE_CCACHE_PROGRAM} (PERFSCOPE_CCACHE=OFF turns it off)")
endif()

# perfscope_cache_across_clones(TARGET...): objects shared by every clone on this machine.
function(perfscope_cache_across_clones)
  if(perfscope_cache_across_clones_launcher)
    set_target_properties(${ARGN} PROPERTIES
                          CXX_COMPILER_LAUNCHER "${perfscope_cache_across_clones_launcher}")
  endif()
endfunction()
