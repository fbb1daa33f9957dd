/* The time of one MPI_Allreduce (sum, float32) of N floats between the ranks
 * of this job: the gradient sum of a data-parallel step without the backward
 * pass around it (BENCHMARKS.md, "Data-parallel training").
 *   mpicc -O2 -o /tmp/allreduce_time bench/allreduce_time.c
 *   mpirun -np 2 /tmp/allreduce_time 7586624 20
 * Prints one JSON line from rank 0: floats, repetitions, median and min ms. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long n = argc > 1 ? atol(argv[1]) : 7586624;
  const int reps = argc > 2 ? atoi(argv[2]) : 20;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float* data = malloc((size_t)n * sizeof(float));
  double* t = malloc((size_t)reps * sizeof(double));
  for (long i = 0; i < n; ++i) data[i] = 1e-3f * (float)(i % 1000);
  for (int r = -2; r < reps; ++r) { /* two warm-up rounds */
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (r >= 0) t[r] = 1e3 * (MPI_Wtime() - t0);
  }
  qsort(t, (size_t)reps, sizeof(double), cmp);
  if (rank == 0) printf("{\"floats\":%ld,\"reps\":%d,\"median_ms\":%.3f,\"min_ms\":%.3f}\n", n, reps, t[reps / 2], t[0]);
  free(data);
  free(t);
  MPI_Finalize();
  return 0;
}
