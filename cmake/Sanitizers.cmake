# Sanitizer and fuzzing builds (docs/reliability.md). Each is its own build tree:
#
#   -DCELLSCOPE_SANITIZE=address,undefined   ASan + UBSan (make test: tier asan, build-asan/)
#   -DCELLSCOPE_SANITIZE=thread              TSan (make test: tier tsan, build-tsan/)
#   -DCELLSCOPE_FUZZ=ON                      clang: libFuzzer harnesses under ASan + UBSan
#                                            (make fuzz, build-fuzz/)
#
# The flags apply to every target of the tree (our libraries, the tests, the binary), so that a
# report points into our code. The system libraries (protobuf, yaml-cpp, tree-sitter) are not
# instrumented: their bugs are out of reach, races through them are not seen. UBSan findings are
# fatal (-fno-sanitize-recover), as ASan's are, so a test run cannot pass with a report in its log.
set(CELLSCOPE_SANITIZE "" CACHE STRING "Sanitizers for the whole build: address,undefined | thread")
option(CELLSCOPE_FUZZ "Build the libFuzzer harnesses (tests/fuzz; needs clang)" OFF)

set(CELLSCOPE_SANITIZED OFF)
if(CELLSCOPE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CELLSCOPE_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++-14)")
  endif()
  set(_cellscope_sanitize "fuzzer-no-link,address,undefined")
elseif(CELLSCOPE_SANITIZE)
  set(_cellscope_sanitize "${CELLSCOPE_SANITIZE}")
endif()

if(_cellscope_sanitize)
  set(CELLSCOPE_SANITIZED ON)
  add_compile_options(-fsanitize=${_cellscope_sanitize} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  # The fuzzer's own runtime is linked into the harnesses only (tests/fuzz/CMakeLists.txt).
  string(REPLACE "fuzzer-no-link," "" _cellscope_link_sanitize "${_cellscope_sanitize}")
  add_link_options(-fsanitize=${_cellscope_link_sanitize})
  # An instrumented build is several times slower: optimise a little, keep line tables for the
  # reports, and skip the full debug information (half the compile time).
  set(CELLSCOPE_SANITIZE_OPT "-O1" CACHE STRING "Optimisation level of an instrumented tree")
  if(NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
    add_compile_options(${CELLSCOPE_SANITIZE_OPT} -g1)
  endif()
  add_compile_definitions(CELLSCOPE_SANITIZED=1)
  # GCC's -fsanitize=undefined leaves out float-cast-overflow, which clang's includes: a double
  # past int64's range cast to int64_t (the first fuzz campaign's python finding, int(1e30)) would
  # pass the asan tier unseen.
  if(_cellscope_sanitize MATCHES "undefined" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-fsanitize=float-cast-overflow)
    add_link_options(-fsanitize=float-cast-overflow)
  endif()
  # GCC's flow analysis is unreliable on instrumented code: it reports maybe-uninitialized inside
  # libstdc++ (<regex>, std::function) that the plain build does not (GCC's manual warns of this).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()

# Sources an instrumented tree compiles without optimisation: the TLS + WebSocket code of the
# deploy agent and its client (Boost.Beast over Asio's SSL streams), I/O-bound, whose -O1 compile
# under clang's ASan + UBSan + coverage took 131 s and 107 s of the tree's CPU time (-O0: about a
# third of that). Their checks are the same; only the optimiser does not run.
function(cellscope_sanitized_unoptimized)
  if(CELLSCOPE_SANITIZED AND NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
    set_source_files_properties(${ARGN} DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                                PROPERTIES COMPILE_OPTIONS "-O0")
  endif()
endfunction()

# A directory of I/O code (server/, adapter/) at -O1 when CELLSCOPE_IO_CODE_O1 is on (CI); the
# instrumented trees are at -O1 already.
function(cellscope_io_code_directory)
  if(CELLSCOPE_IO_CODE_O1 AND NOT CELLSCOPE_SANITIZED AND NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
    set_property(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} APPEND PROPERTY COMPILE_OPTIONS -O1)
  endif()
endfunction()

# Boost.Asio's handler invocation adds std::atomic_thread_fence, which TSan does not model (GCC
# warns, -Wtsan); the happens-before edges between threads come from the scheduler's mutex and
# condition variable, which TSan does see. For the targets that include Asio.
function(cellscope_asio_target target)
  if(CELLSCOPE_SANITIZED AND _cellscope_sanitize MATCHES "thread" AND
     CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-tsan)
  endif()
endfunction()
