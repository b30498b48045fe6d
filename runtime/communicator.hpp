// Communicator: the ranks of a job started by an MPI launcher (Open MPI's mpirun, or Slurm's srun), for
// data-parallel training (models/training/trainer.hpp) and sweeps (tools/sweep_command.cpp). MPI itself
// stays inside runtime/communicator.cpp: nothing else includes mpi.h.
//
// A process that no launcher started never initialises MPI (launched() is false), so `matmem train` and the
// tests run without mpirun. MPI is initialised on the first world() and finalised when the process exits
// normally; a rank that dies or throws makes mpirun stop every rank (its default), so a job never hangs on a
// lost rank.
#pragma once
#include <cstddef>
#include <cstdint>

namespace matmem {

class Communicator {
 public:
  // Whether an MPI launcher started this process (it sets OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK).
  static bool launched();
  // The job's ranks; initialises MPI on the first call. Throws an Error if MPI cannot start.
  static Communicator& world();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's `n` values gathered in rank order: out[r·n + i] = rank r's in[i]. Every rank gets all.
  void allgather(const float* in, std::size_t n, float* out) const;
  void allgather(const double* in, std::size_t n, double* out) const;
  // One integer to a rank, and from one (any rank: from < 0); `tag` keeps kinds of messages apart.
  void send(int to, std::int64_t value, int tag) const;
  std::int64_t receive(int from, int tag, int* sender = nullptr) const;
  // A message from any rank with `tag` waiting to be received: its sender, or −1.
  int waiting(int tag) const;
  void barrier() const;

 private:
  Communicator();
  int rank_ = 0, size_ = 1;
};

}  // namespace matmem
