#include "matmem/runtime/communicator.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <mpi.h>

#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  throw Error(fmt::format("MPI: {} failed: {}", what, std::string(text, std::size_t(n))));
}

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

bool Communicator::launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

Communicator::Communicator() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  std::atexit(finalize);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

Communicator& Communicator::world() {
  static Communicator c;
  return c;
}

void Communicator::allgather(const float* in, std::size_t n, float* out) const {
  check(MPI_Allgather(in, int(n), MPI_FLOAT, out, int(n), MPI_FLOAT, MPI_COMM_WORLD), "MPI_Allgather");
}

void Communicator::allgather(const double* in, std::size_t n, double* out) const {
  check(MPI_Allgather(in, int(n), MPI_DOUBLE, out, int(n), MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather");
}

void Communicator::send(int to, std::int64_t value, int tag) const {
  check(MPI_Send(&value, 1, MPI_INT64_T, to, tag, MPI_COMM_WORLD), "MPI_Send");
}

std::int64_t Communicator::receive(int from, int tag, int* sender) const {
  std::int64_t value = 0;
  MPI_Status status;
  check(MPI_Recv(&value, 1, MPI_INT64_T, from < 0 ? MPI_ANY_SOURCE : from, tag, MPI_COMM_WORLD, &status), "MPI_Recv");
  if (sender) *sender = status.MPI_SOURCE;
  return value;
}

int Communicator::waiting(int tag) const {
  int flag = 0;
  MPI_Status status;
  check(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
  return flag ? status.MPI_SOURCE : -1;
}

void Communicator::barrier() const { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

}  // namespace matmem
