# `cmake --install build --prefix P`: the matmem command, libmatmem, its public headers (under
# include/matmem/), a CMake package (find_package(matmem), target matmem::matmem) and matmem.pc. Every path
# in them is relative to the prefix, so the installed tree can be moved.
include(CMakePackageConfigHelpers)

set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/package/public_headers.txt)
file(STRINGS ${PROJECT_SOURCE_DIR}/tools/package/public_headers.txt MATMEM_PUBLIC_HEADERS REGEX "^[^#]")
foreach(header ${MATMEM_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/matmem/${dir})
endforeach()
install(FILES ${MATMEM_INCLUDE_ROOT}/matmem/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/matmem)

install(TARGETS matmem_library EXPORT matmemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development)
install(TARGETS matmem RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(MATMEM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/matmem)
install(EXPORT matmemTargets NAMESPACE matmem:: DESTINATION ${MATMEM_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/tools/package/matmemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/matmemConfig.cmake INSTALL_DESTINATION ${MATMEM_CMAKE_DIR})
# Before 1.0 a minor version may change the API: 0.1 is found by find_package(matmem 0.1), not 0.2.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/matmemConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/matmemConfig.cmake ${PROJECT_BINARY_DIR}/package/matmemConfigVersion.cmake
  DESTINATION ${MATMEM_CMAKE_DIR})

# pkg-config: prefix relative to the .pc file's own folder (pkg-config's ${pcfiledir}), so it moves with it.
file(RELATIVE_PATH MATMEM_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" MATMEM_PC_TO_PREFIX "${MATMEM_PC_TO_PREFIX}")  # "../../" from CMake 3.25: no "//" in paths
string(JOIN " " MATMEM_PC_CFLAGS ${MATMEM_ARCH_OPTIONS})
configure_file(${PROJECT_SOURCE_DIR}/tools/package/matmem.pc.in ${PROJECT_BINARY_DIR}/package/matmem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/matmem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
