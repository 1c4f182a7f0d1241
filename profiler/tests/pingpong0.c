/* Overhead probes for bench/bench_profiler.py (2 ranks).
 *   pingpong0 ITERS -> from rank 0:
 *     "pingpong_us <one-way latency of a 0-byte ping-pong>"  best of 20 rounds of ITERS/20
 *     "nullcall_ns <time of one MPI_Comm_rank call>"          best of 200 rounds of 5000 calls
 * Short rounds and the best of many: on a shared machine a long round is almost never free
 * of preemption, and preemption is not what is being measured.
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
    int per = iters / 20 > 0 ? iters / 20 : 1;
    double best_pp = 1e30;
    for (int round = 0; round < 21; round++) { /* round 0 is warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < per; i++) {
            if (rank == 0) {
                MPI_Send(&c, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&c, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(&c, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&c, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t = (MPI_Wtime() - t0) / per / 2 * 1e6;
        if (round && t < best_pp) best_pp = t;
    }
    double best = 1e30;
    for (int round = 0; round < 200; round++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < 5000; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
        double t = (MPI_Wtime() - t0) / 5000 * 1e9;
        if (t < best) best = t;
    }
    if (rank == 0) {
        printf("pingpong_us %.6f\n", best_pp);
        printf("nullcall_ns %.3f\n", best);
    }
    MPI_Finalize();
    return 0;
}
