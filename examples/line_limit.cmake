# The README promises the echo and HTTP examples are each under LIMIT lines
# (issue 16 asks for under 150): run as ctest's example_line_limit.
#   cmake -DLIMIT=150 -DFILES="a.cpp;b.cpp" -P line_limit.cmake
cmake_minimum_required(VERSION 3.20)
foreach(file IN LISTS FILES)
  file(READ "${file}" content)
  # Counts newlines, as wc -l does (file(STRINGS) would skip empty lines).
  string(REGEX MATCHALL "\n" newlines "${content}")
  list(LENGTH newlines count)
  if(NOT count LESS LIMIT)
    message(FATAL_ERROR "${file} has ${count} lines, the README says under ${LIMIT}")
  endif()
endforeach()
