# A curated warning set (after curl's PickyWarnings); -Werror when LLMEM_WERROR is on.
function(llmem_warnings target)
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
      -Wformat=2 -Wvla -Wwrite-strings -Wdouble-promotion -Wcast-align
      -Wno-unknown-pragmas)
    if(LLMEM_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
endfunction()
