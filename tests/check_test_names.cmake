# Fails when a TEST_CASE name would not select itself: catch_discover_tests passes each name to the test
# binary as a test spec, where a leading '~' means "every test but this one" and a ';' splits the CTest
# command line, so such a test would run other tests (or none) and still pass.
#   cmake -DBINARIES="a|b|c" -P check_test_names.cmake
string(REPLACE "|" ";" binaries "${BINARIES}")
set(bad "")
foreach(bin IN LISTS binaries)
  execute_process(COMMAND "${bin}" --list-test-names-only OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" "<semicolon>" out "${out}")
  string(REPLACE "\n" ";" names "${out}")
  foreach(name IN LISTS names)
    if(name MATCHES "^~" OR name MATCHES "<semicolon>" OR name MATCHES "^\\[")
      string(APPEND bad "\n  ${bin}: '${name}'")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "test names that Catch2 reads as filters (leading '~' or '[', or a ';'):${bad}")
endif()
message(STATUS "test names: every name selects only itself")
