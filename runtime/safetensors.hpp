// Named tensors in the safetensors format (matmem's checkpoints), readable from Python with `safetensors`
// or a few lines of numpy:
//   8 bytes: N, the header's length (little-endian u64);  N bytes: a JSON header
//   {"<name>": {"dtype": "F32"|"F64", "shape": [...], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"<key>": "<string>", ...}};  then the raw little-endian data, offsets relative to it.
// Shapes are logical: a parameter [r,c]; a batch [B,r,c]; a memory [B,N,r,c].
// write_safetensors writes through write_file_durably (runtime/files.hpp): PATH.tmp, fsynced, renamed over
// PATH, the directory fsynced, so a crash (or a power cut) leaves either the old file or the new one, never a
// torn one; a write that fails (a full disk, a file-size limit, a directory it cannot write) throws an Error
// naming the file and the reason and leaves the old file as it was. read_safetensors checks every offset, size
// and type and names the file and the entry when something is wrong.
#pragma once
#include <map>
#include <string>

#include "matmem/runtime/tensor.hpp"

namespace matmem {

struct TensorFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

void write_safetensors(const std::string& path, const TensorFile& file);
TensorFile read_safetensors(const std::string& path);

}  // namespace matmem
