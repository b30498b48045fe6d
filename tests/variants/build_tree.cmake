# Configures and builds a second tree of matmem under the main build for a variant test (CMakeLists.txt
# here), printing how long each part took:
#   cmake -DSOURCE_DIR=… -DTREE=… -DCOMPILER=… -DOPTIONS="-DA=B;…" -DTARGETS="t1;t2" -P build_tree.cmake
string(TIMESTAMP start "%s")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${TREE} -DCMAKE_BUILD_TYPE=Release
                        -DCMAKE_CXX_COMPILER=${COMPILER} -DBUILD_TESTING=ON -DMATMEM_VARIANT_TESTS=OFF ${OPTIONS}
                OUTPUT_FILE ${TREE}.configure.log ERROR_FILE ${TREE}.configure.log RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(READ ${TREE}.configure.log log)
  message(FATAL_ERROR "configuring ${TREE} failed:\n${log}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${TREE} -j 2 --target ${TARGETS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building ${TARGETS} in ${TREE} failed")
endif()
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
message(STATUS "built ${TARGETS} in ${TREE} in ${seconds} s")
