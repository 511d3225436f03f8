# Warning flags for fjord's own targets only; consumers' flags are untouched.
function(fjord_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 false positives: designated initializers that rely on default
    # member initializers (fixed in GCC 13), and std::optional members at -O3
    # (GCC bugs 105562, 107138).
    target_compile_options(${target} PRIVATE -Wno-missing-field-initializers
                                             -Wno-maybe-uninitialized)
  endif()
  if(FJORD_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
