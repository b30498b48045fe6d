# A text file line by line in a CMake script (included by the tests' cmake -P checks).

# The file's lines as a CMake list: ';', '[', ']' and '\' (list syntax) are swapped for placeholders, and each
# line gets a leading 'L' so that an empty line stays an element.
function(read_lines path out)
  file(READ "${path}" text)
  string(REPLACE "\\" "@BS@" text "${text}")
  string(REPLACE ";" "@SC@" text "${text}")
  string(REPLACE "[" "@LB@" text "${text}")
  string(REPLACE "]" "@RB@" text "${text}")
  string(REPLACE "\n" ";L" text "L${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
function(restore_line element out)
  string(SUBSTRING "${element}" 1 -1 line)
  string(REPLACE "@BS@" "\\" line "${line}")
  string(REPLACE "@SC@" ";" line "${line}")
  string(REPLACE "@LB@" "[" line "${line}")
  string(REPLACE "@RB@" "]" line "${line}")
  set(${out} "${line}" PARENT_SCOPE)
endfunction()
