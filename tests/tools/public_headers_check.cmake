# Checks the public headers (tools/package/public_headers.txt): documented and closed.
#
#   cmake -DSOURCE_DIR=<source tree> -P public_headers_check.cmake
#
# For each header in the list:
#   * its first line is a `/// @file` comment;
#   * every public declaration is documented: the line before the one it starts on is a `///` comment (not a
#     `///<`, which documents the line it ends), or one of its lines carries a trailing `///<` comment;
#   * an enum written on one line names each of its enumerators in that comment;
#   * it includes only C++ standard headers (`<name>`, no '.' or '/'), nlohmann/json_fwd.hpp, the headers of
#     the list and matmem/version.hpp (generated and installed beside them): no xtensor, xsimd, MPI or fmt.
#
# A declaration is a statement: its lines run from where it starts to the first that ends in ';', '{' or '}'
# or opens a brace it does not close (a `#define` is one line, with its '\' continuations). Checked are the
# statements at file or namespace scope, inside extern "C", in the public and protected part of a class or
# struct (a class starts private, a struct public; a nested class is checked when it is itself public), and
# each line of an enum written over several lines (an enumerator). Not checked: function bodies and brace
# initialisers, private parts, access specifiers, namespace and extern "C" openings, closing braces, forward
# declarations (`class Tape;`), friend and using-declarations (`using Error::Error;`, not a `using X = ...`
# alias), deleted functions, destructors, member definitions outside their class (`TensorView<T>
# Tensor::view() {`), #include and other preprocessor lines, and whatever lies between `/// @cond` and
# `/// @endcond` (hidden from the reference). Comments and string literals are left out before the braces are
# counted.
cmake_minimum_required(VERSION 3.22)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<source tree> -P public_headers_check.cmake")
endif()

file(STRINGS "${SOURCE_DIR}/tools/package/public_headers.txt" public_headers REGEX "^[^#]")
set(problems "")
set(problem_count 0)
macro(problem text)
  string(APPEND problems "  ${text}\n")
  math(EXPR problem_count "${problem_count} + 1")
endmacro()

include(${CMAKE_CURRENT_LIST_DIR}/../lines.cmake)  # read_lines, restore_line

foreach(header ${public_headers})
  set(path "${SOURCE_DIR}/${header}")
  if(NOT EXISTS "${path}")
    problem("${header}: listed in tools/package/public_headers.txt but missing")
    continue()
  endif()
  read_lines("${path}" lines)

  # Scopes as parallel lists: kind (file, namespace, externc, class, enum, body), visible (0/1), access.
  set(kinds file)
  set(visibles 1)
  set(accesses public)
  set(depth 0)
  set(line_no 0)
  set(in_cond 0)
  set(macro_cont 0)
  set(doc "")          # text of the /// lines just above, "" when the line above is no /// comment
  set(have_doc 0)
  set(stmt_open 0)     # a statement started on an earlier line and has not ended
  foreach(element IN LISTS lines)
    math(EXPR line_no "${line_no} + 1")
    restore_line("${element}" line)
    if(line_no EQUAL 1 AND NOT line MATCHES "^/// @file")
      problem("${header}:1: the first line is not a `/// @file` comment")
    endif()
    if(in_cond)
      if(line MATCHES "@endcond")
        set(in_cond 0)
      endif()
      continue()
    endif()
    if(line MATCHES "^[ \t]*///.*@cond")
      set(in_cond 1)
      continue()
    endif()
    if(macro_cont)
      if(NOT line MATCHES "\\\\[ \t]*$")
        set(macro_cont 0)
      endif()
      continue()
    endif()
    list(GET kinds ${depth} kind)
    list(GET visibles ${depth} visible)
    list(GET accesses ${depth} access)

    # Comment and blank lines.
    if(line MATCHES "^[ \t]*///<")
      set(have_doc 0)
      set(doc "")
      continue()
    elseif(line MATCHES "^[ \t]*///(.*)$")
      set(have_doc 1)
      string(APPEND doc " ${CMAKE_MATCH_1}")
      continue()
    elseif(line MATCHES "^[ \t]*(//.*)?$")
      set(have_doc 0)
      set(doc "")
      continue()
    endif()

    # Preprocessor lines: includes are checked, a #define is a declaration.
    if(line MATCHES "^[ \t]*#")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"]*)[>\"]")
        set(delimiter "${CMAKE_MATCH_1}")
        set(included "${CMAKE_MATCH_2}")
        if(included MATCHES "^(xtensor|xtensor-blas|xsimd|xtl|mpi|openmpi|fmt)([/._-]|$)")
          problem("${header}:${line_no}: includes <${included}>, a header of a package a user of libmatmem need not have (xtensor, xsimd, MPI, fmt)")
        elseif(included MATCHES "^matmem/(.*)$")
          list(FIND public_headers "${CMAKE_MATCH_1}" at)
          if(at EQUAL -1 AND NOT included STREQUAL "matmem/version.hpp")
            problem("${header}:${line_no}: includes ${included}, which is not a public header (tools/package/public_headers.txt)")
          endif()
        elseif(NOT (delimiter STREQUAL "<" AND (included MATCHES "^[a-z_0-9]+$" OR included STREQUAL "nlohmann/json_fwd.hpp")))
          problem("${header}:${line_no}: includes ${included}, neither a C++ standard header nor a public matmem header")
        endif()
      elseif(line MATCHES "^[ \t]*#[ \t]*define[ \t]+([A-Za-z_0-9]+)" AND visible)
        set(name "${CMAKE_MATCH_1}")
        if(NOT have_doc AND NOT line MATCHES "///<")
          problem("${header}:${line_no}: macro ${name} has no /// comment")
        endif()
      endif()
      if(line MATCHES "\\\\[ \t]*$")
        set(macro_cont 1)
      endif()
      set(have_doc 0)
      set(doc "")
      continue()
    endif()

    # Code: trailing comment and string literals out.
    set(trailing "")
    if(line MATCHES "///<(.*)$")
      set(trailing "${CMAKE_MATCH_1}")
    endif()
    string(REGEX REPLACE "\"([^\"\\\\]|\\\\.)*\"" "\"\"" code "${line}")
    string(REGEX REPLACE "'([^'\\\\]|\\\\.)'" "''" code "${code}")
    string(REGEX REPLACE "//.*$" "" code "${code}")
    string(STRIP "${code}" code)

    # An enumerator of an enum written over several lines: each line on its own.
    if(kind STREQUAL "enum" AND NOT code MATCHES "^}")
      if(visible AND NOT have_doc AND trailing STREQUAL "")
        problem("${header}:${line_no}: enumerator `${code}` has no /// or ///< comment")
      endif()
      set(have_doc 0)
      set(doc "")
      continue()
    endif()

    if(NOT stmt_open)
      set(stmt_line ${line_no})
      set(stmt_text "")
      set(stmt_doc "${doc}")
      set(stmt_have_doc ${have_doc})
      set(stmt_trailing "")
      set(stmt_checked 0)
      if(visible AND kind MATCHES "^(file|namespace|externc|class)$")
        set(stmt_checked 1)
      endif()
    endif()
    string(APPEND stmt_text " ${code}")
    string(APPEND stmt_trailing "${trailing}")
    set(have_doc 0)
    set(doc "")

    # Braces on this line (literals and comments already out).
    string(REGEX MATCHALL "{" opens "${code}")
    string(REGEX MATCHALL "}" closes "${code}")
    list(LENGTH opens n_open)
    list(LENGTH closes n_close)
    math(EXPR net "${n_open} - ${n_close}")

    if(code MATCHES "[;{}]$" OR code MATCHES "^(public|private|protected)[ \t]*:$" OR net GREATER 0)
      set(stmt_open 0)  # ended, or its body or initialiser opens a scope of its own
    else()
      set(stmt_open 1)
    endif()

    # The statement's kind, when it has ended (or opens a scope).
    string(STRIP "${stmt_text}" text)
    if(NOT stmt_open)
      set(new_kind body)
      if(text MATCHES "^namespace")
        set(new_kind namespace)
      elseif(text MATCHES "^extern[ \t]*\"\"")
        set(new_kind externc)
      elseif(text MATCHES "^(template[ \t]*<[^{]*>[ \t]*)?(class|struct|union)[ \t]+[A-Za-z_][^({=]*{")
        set(new_kind class)
      elseif(text MATCHES "^enum[^{=]*{$")
        set(new_kind enum)
      endif()

      if(code MATCHES "^(public|private|protected)[ \t]*:$")
        if(kind STREQUAL "class")
          list(REMOVE_AT accesses ${depth})
          list(INSERT accesses ${depth} ${CMAKE_MATCH_1})
        endif()
      elseif(stmt_checked AND NOT (kind STREQUAL "class" AND access STREQUAL "private"))
        set(skip 0)
        string(FIND "${text}" "(" paren)
        if(paren GREATER -1)
          string(SUBSTRING "${text}" 0 ${paren} before_paren)
        else()
          set(before_paren "${text}")
        endif()
        if(text MATCHES "^}" OR text MATCHES "^(namespace|extern)"
           OR text MATCHES "^(class|struct|union)[ \t]+[A-Za-z_0-9]+[ \t]*;$"
           OR text MATCHES "^friend[ \t]" OR text MATCHES "^using[ \t]+[A-Za-z_0-9:]+::[A-Za-z_0-9]+[ \t]*;$"
           OR text MATCHES "=[ \t]*delete[ \t]*;" OR text MATCHES "^(virtual[ \t]+)?~")
          set(skip 1)
        elseif(NOT kind STREQUAL "class" AND before_paren MATCHES "([A-Za-z_0-9]+)::~?[A-Za-z_0-9]+[ \t]*$"
               AND NOT CMAKE_MATCH_1 STREQUAL "std")
          set(skip 1)  # a member defined outside its class: documented where it is declared
        endif()
        if(NOT skip)
          string(REGEX REPLACE "[ \t]+" " " shown "${text}")
          string(LENGTH "${shown}" shown_length)
          if(shown_length GREATER 90)
            string(SUBSTRING "${shown}" 0 87 shown)
            string(APPEND shown "...")
          endif()
          if(NOT stmt_have_doc AND stmt_trailing STREQUAL "")
            problem("${header}:${stmt_line}: `${shown}` has no /// comment above it (or ///< after it)")
          elseif(text MATCHES "^enum[^{]*{([^}]*)}")
            # One line: the comment names every enumerator.
            string(REPLACE "," ";" enumerators "${CMAKE_MATCH_1}")
            foreach(enumerator ${enumerators})
              string(REGEX REPLACE "=.*$" "" enumerator "${enumerator}")
              string(STRIP "${enumerator}" enumerator)
              if(NOT "${stmt_doc} ${stmt_trailing}" MATCHES "(^|[^A-Za-z_0-9])${enumerator}([^A-Za-z_0-9]|$)")
                problem("${header}:${stmt_line}: the comment of `${shown}` does not name enumerator ${enumerator}")
              endif()
            endforeach()
          endif()
        endif()
      endif()
    endif()

    # Scopes.
    if(net GREATER 0)
      foreach(k RANGE 1 ${net})
        set(push_kind body)
        if(k EQUAL 1)
          set(push_kind ${new_kind})
        endif()
        set(push_visible 0)
        if(visible AND NOT (kind STREQUAL "class" AND access STREQUAL "private") AND NOT kind STREQUAL "body")
          set(push_visible 1)
        endif()
        set(push_access public)
        if(push_kind STREQUAL "class" AND text MATCHES "^(template[ \t]*<[^{]*>[ \t]*)?class")
          set(push_access private)
        endif()
        list(APPEND kinds ${push_kind})
        list(APPEND visibles ${push_visible})
        list(APPEND accesses ${push_access})
        math(EXPR depth "${depth} + 1")
        set(kind ${push_kind})
        set(visible ${push_visible})
        set(access ${push_access})
      endforeach()
    elseif(net LESS 0)
      math(EXPR pops "0 - ${net}")
      foreach(k RANGE 1 ${pops})
        if(depth EQUAL 0)
          problem("${header}:${line_no}: more closing braces than opening ones (the check cannot follow it)")
          break()
        endif()
        list(REMOVE_AT kinds ${depth})
        list(REMOVE_AT visibles ${depth})
        list(REMOVE_AT accesses ${depth})
        math(EXPR depth "${depth} - 1")
      endforeach()
    endif()
  endforeach()
  if(NOT depth EQUAL 0)
    problem("${header}: braces do not balance (the check cannot follow it)")
  endif()
endforeach()

list(LENGTH public_headers header_count)
if(problem_count GREATER 0)
  message(FATAL_ERROR "${problem_count} problems in the public headers (rules: tests/tools/public_headers_check.cmake):\n${problems}")
endif()
message(STATUS "the ${header_count} public headers are documented and include only public headers and the standard library")
