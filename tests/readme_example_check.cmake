# Fails unless the README's custom-op code block is exactly tools/examples/custom_op.cpp.
file(READ "${SOURCE_DIR}/README.md" readme)
file(READ "${SOURCE_DIR}/tools/examples/custom_op.cpp" example)
string(FIND "${readme}" "${example}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md does not contain tools/examples/custom_op.cpp verbatim; update the README")
endif()
