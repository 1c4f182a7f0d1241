/* Overhead probes for bench/bench_profiler.py (2 ranks).
 *   pingpong0 ITERS   -> prints "pingpong_us <one-way latency of a 0-byte ping-pong>" and
 *                        "nullcall_ns <time of one MPI_Comm_rank call>" from rank 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 10000, rank, r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char c = 0;
    for (int warm = 0; warm < 2; warm++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(&c, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&c, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(&c, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&c, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t1 = MPI_Wtime();
        if (warm && rank == 0) printf("pingpong_us %.6f\n", (t1 - t0) / iters / 2 * 1e6);
    }
    int calls = iters * 50;
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < calls; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
        double t = (MPI_Wtime() - t0) / calls * 1e9;
        if (t < best) best = t;
    }
    if (rank == 0) printf("nullcall_ns %.3f\n", best);
    MPI_Finalize();
    return 0;
}
