# The HTML reference of the public headers (tools/package/public_headers.txt) with Debian's doxygen, its main page
# README.md and the tutorials, reference and results pages as its pages: the target `docs` writes build/docs/html
# (tools/setup.sh --docs installs doxygen and builds it). Without doxygen there is no such target and nothing
# else changes.
find_program(DOXYGEN_EXECUTABLE doxygen)
if(DOXYGEN_EXECUTABLE)
  set(MATMEM_DOCS_DIR ${PROJECT_BINARY_DIR}/docs)
  file(STRINGS ${PROJECT_SOURCE_DIR}/tools/package/public_headers.txt docs_headers REGEX "^[^#]")
  set(MATMEM_DOCS_INPUT "")
  set(docs_depends "")
  # The pages: README.md (the main page), the tutorials, then the reference pages.
  set(docs_pages README.md tools/examples/matntm/README.md tools/examples/user_project/README.md
      tools/python/README.md models/README.md models/training/README.md models/ntm/README.md models/rnn/README.md
      models/gamma/README.md models/fastweights/README.md models/ffn/README.md models/graph/README.md
      models/tasks/README.md models/data/README.md models/capacity/README.md ops/README.md autodiff/README.md
      tools/README.md tests/README.md)
  # and the results pages, which the guides link to
  file(GLOB docs_results RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/models/results/*.md
       ${PROJECT_SOURCE_DIR}/tools/results/*.md)
  list(SORT docs_results)
  list(APPEND docs_headers ${docs_pages} ${docs_results})
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
