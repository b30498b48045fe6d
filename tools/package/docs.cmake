# The HTML reference of the public headers (tools/package/public_headers.txt) with Debian's doxygen: the target
# `docs` writes build/docs/html (tools/setup.sh --docs installs doxygen and builds it). Without doxygen there is
# no such target and nothing else changes.
find_program(DOXYGEN_EXECUTABLE doxygen)
if(DOXYGEN_EXECUTABLE)
  set(MATMEM_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
  file(STRINGS ${PROJECT_SOURCE_DIR}/tools/package/public_headers.txt docs_headers REGEX "^[^#]")
  set(MATMEM_DOCS_INPUT "")
  set(docs_depends "")
  foreach(header ${docs_headers})
    string(APPEND MATMEM_DOCS_INPUT " \\\n                         ${PROJECT_SOURCE_DIR}/${header}")
    list(APPEND docs_depends ${PROJECT_SOURCE_DIR}/${header})
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/tools/package/Doxyfile.in ${MATMEM_DOCS_DIR}/Doxyfile @ONLY)
  add_custom_command(OUTPUT ${MATMEM_DOCS_DIR}/html/index.html
    COMMAND ${DOXYGEN_EXECUTABLE} ${MATMEM_DOCS_DIR}/Doxyfile
    DEPENDS ${docs_depends} ${MATMEM_DOCS_DIR}/Doxyfile
    WORKING_DIRECTORY ${MATMEM_DOCS_DIR}
    COMMENT "Writing the API reference to ${MATMEM_DOCS_DIR}/html")
  add_custom_target(docs DEPENDS ${MATMEM_DOCS_DIR}/html/index.html)
endif()
