# The Python grammar comes from the npm registry's tree-sitter-python package (ABI 14, which
# Debian 12's libtree-sitter 0.20.7 accepts). It is fetched at configure time into the build
# tree and compiled into the project; it is never copied into the repository.
set(TS_PYTHON_VERSION "0.23.6" CACHE STRING "tree-sitter-python version from the npm registry")
set(TS_PYTHON_DIR "${CMAKE_BINARY_DIR}/_deps/tree-sitter-python-${TS_PYTHON_VERSION}")
if(NOT EXISTS "${TS_PYTHON_DIR}/package/src/parser.c")
  find_program(NPM_PROGRAM npm REQUIRED)
  file(MAKE_DIRECTORY "${TS_PYTHON_DIR}")
  message(STATUS "Fetching tree-sitter-python@${TS_PYTHON_VERSION} with npm pack")
  execute_process(
    COMMAND ${NPM_PROGRAM} pack "tree-sitter-python@${TS_PYTHON_VERSION}" --silent
    WORKING_DIRECTORY "${TS_PYTHON_DIR}"
    RESULT_VARIABLE npm_rc OUTPUT_VARIABLE npm_out ERROR_VARIABLE npm_err)
  if(NOT npm_rc EQUAL 0)
    message(FATAL_ERROR "npm pack tree-sitter-python@${TS_PYTHON_VERSION} failed: ${npm_err}")
  endif()
  file(GLOB ts_tgz "${TS_PYTHON_DIR}/*.tgz")
  file(ARCHIVE_EXTRACT INPUT "${ts_tgz}" DESTINATION "${TS_PYTHON_DIR}"
       PATTERNS "package/src/*")
endif()
add_library(tree_sitter_python STATIC
  "${TS_PYTHON_DIR}/package/src/parser.c"
  "${TS_PYTHON_DIR}/package/src/scanner.c")
target_include_directories(tree_sitter_python PRIVATE "${TS_PYTHON_DIR}/package/src")
set_target_properties(tree_sitter_python PROPERTIES C_STANDARD 11 POSITION_INDEPENDENT_CODE ON)
target_compile_options(tree_sitter_python PRIVATE -w)
