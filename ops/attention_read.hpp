// attention_read (ops/attention_read.cpp): k soft reads of the rows of a matrix, 001 §2.1 eq. 4. The k rows of
// Q are the queries; each attends to the m rows of P with softmax weights of its dot products with them and
// reads their weighted sum. Q:[B,k,d], P:[B,m,d] -> [B,k,d]. The queries come from a small network of P and its
// context (models/layers/attention.hpp). Declared apart from ops.hpp, which the whole tree includes.
#pragma once
#include "matmem/autodiff/tape.hpp"

namespace matmem {

Var attention_read(Var queries, Var rows);

}  // namespace matmem
