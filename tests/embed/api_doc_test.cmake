# docs/API.md shows every docs/snippets/*.cpp verbatim after its marker, and names no snippet
# that does not exist: the snippets are compiled and run by the build and ctest, so the page
# shows code that works.
#   cmake -DSOURCE_DIR=... -P this
file(READ ${SOURCE_DIR}/docs/API.md page)
file(GLOB snippets ${SOURCE_DIR}/docs/snippets/*.cpp)
list(LENGTH snippets count)
if(count EQUAL 0)
  message(FATAL_ERROR "no snippets in docs/snippets")
endif()
foreach(snippet ${snippets})
  get_filename_component(name ${snippet} NAME)
  file(READ ${snippet} code)
  string(FIND "${page}" "<!-- snippet: docs/snippets/${name} -->\n```cpp\n${code}```" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "docs/API.md does not show docs/snippets/${name} verbatim after its "
                        "marker: copy the file into the page")
  endif()
endforeach()
string(REGEX MATCHALL "<!-- snippet: docs/snippets/[a-z_]+\\.cpp -->" markers "${page}")
foreach(marker ${markers})
  string(REGEX REPLACE "<!-- snippet: (docs/snippets/[a-z_]+\\.cpp) -->" "\\1" path "${marker}")
  if(NOT EXISTS ${SOURCE_DIR}/${path})
    message(FATAL_ERROR "docs/API.md names ${path}, which does not exist")
  endif()
endforeach()
