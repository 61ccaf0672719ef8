# Makes a MiniDebugInfo copy of a program the way Fedora's find-debuginfo does: the symbols of
# the functions not already in .dynsym, kept in an otherwise empty ELF file, xz-compressed into
# the .gnu_debugdata section of the stripped program.
# cmake -DINPUT=prog -DOUTPUT=prog.mini -DWORK=dir -DNM=nm -DOBJCOPY=objcopy -DXZ=xz -P this
cmake_policy(SET CMP0007 NEW)  # empty list elements (the last line of a listing) count
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${NM} -D --format=posix --defined-only ${INPUT}
                OUTPUT_VARIABLE dynamic_listing COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${NM} --format=posix --defined-only ${INPUT}
                OUTPUT_VARIABLE full_listing COMMAND_ERROR_IS_FATAL ANY)
set(dynamic_names "")
string(REPLACE "\n" ";" dynamic_lines "${dynamic_listing}")
foreach(line IN LISTS dynamic_lines)
  string(REGEX MATCH "^[^ ]+" name "${line}")
  list(APPEND dynamic_names "${name}")
endforeach()
set(keep "")
string(REPLACE "\n" ";" full_lines "${full_listing}")
foreach(line IN LISTS full_lines)
  if(line MATCHES "^([^ ]+) ([TtD]) ")
    list(FIND dynamic_names "${CMAKE_MATCH_1}" in_dynamic)
    if(in_dynamic EQUAL -1)
      string(APPEND keep "${CMAKE_MATCH_1}\n")
    endif()
  endif()
endforeach()
file(WRITE ${WORK}/keep_symbols "${keep}")
file(REMOVE ${WORK}/mini_debuginfo ${WORK}/mini_debuginfo.xz)
execute_process(COMMAND ${OBJCOPY} --only-keep-debug ${INPUT} ${WORK}/debug
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${OBJCOPY} -S --remove-section .gdb_index --remove-section .comment
                        --keep-symbols=${WORK}/keep_symbols ${WORK}/debug ${WORK}/mini_debuginfo
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${XZ} --keep ${WORK}/mini_debuginfo COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${OBJCOPY} --strip-all ${INPUT} ${OUTPUT} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${OBJCOPY} --add-section .gnu_debugdata=${WORK}/mini_debuginfo.xz
                        ${OUTPUT} COMMAND_ERROR_IS_FATAL ANY)
