# Applies FJORD_SANITIZE to one target. The library propagates the flags
# (PUBLIC) so that every test binary links the matching runtime.
function(fjord_apply_sanitizers target scope)
  if(NOT FJORD_SANITIZE)
    return()
  endif()
  list(JOIN FJORD_SANITIZE "," joined)
  set(flags -fsanitize=${joined} -fno-omit-frame-pointer)
  if("undefined" IN_LIST FJORD_SANITIZE)
    list(APPEND flags -fno-sanitize-recover=undefined)
  endif()
  target_compile_options(${target} ${scope} ${flags})
  target_link_options(${target} ${scope} ${flags})
endfunction()
