# Fails unless the README shows each example file verbatim.
file(READ "${SOURCE_DIR}/README.md" readme)
foreach(example tools/examples/custom_op.cpp tools/examples/gamma_memory_rnn.cpp)
  file(READ "${SOURCE_DIR}/${example}" text)
  string(FIND "${readme}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md does not contain ${example} verbatim; update the README")
  endif()
endforeach()
