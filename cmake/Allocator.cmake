# The analyser allocates many small objects (values, AST nodes, graph nodes): glibc's malloc
# spends a third of the time of a 10k-node analysis in _int_malloc/malloc_consolidate. Debian's
# mimalloc replaces malloc process-wide when it is linked first (see docs/benchmarks.md).
find_library(MIMALLOC_LIBRARY NAMES mimalloc REQUIRED)

# Not in sanitizer builds: the sanitizers bring their own allocator (and mimalloc would hide
# the heap from them).
function(cellscope_use_fast_allocator target)
  if(CELLSCOPE_SANITIZED)
    return()
  endif()
  # --no-as-needed keeps the library even though no symbol is referenced directly.
  target_link_libraries(${target} PRIVATE -Wl,--no-as-needed ${MIMALLOC_LIBRARY} -Wl,--as-needed)
endfunction()
