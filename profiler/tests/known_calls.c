/* Known MPI calls with known sizes, for exact checks of the profiler (2 or more ranks).
 *
 *   known_calls [normal|pcontrol|reset|exit|hang|abort|signal|threads|manythreads]
 *
 * normal: ranks 0 and 1 exchange 10 x MPI_Send of 1000 B (MPI_Recv posts 4096 B and passes
 * MPI_STATUS_IGNORE), 5 x MPI_Isend of 256 ints from 1 to 0 (MPI_Irecv of 512 ints +
 * MPI_Waitall); all
 * ranks do 3 x MPI_Allreduce of 100 doubles, 2 x MPI_Bcast of 64 ints from root 0 and one
 * MPI_Alltoallv where rank r sends r*n+j+1 ints to rank j.
 * pcontrol: normal, then MPI_Pcontrol(2) (snapshot), MPI_Pcontrol(0), 3 barriers (not
 * counted), MPI_Pcontrol(1), 1 barrier.
 * hang: normal, then every rank waits for a message that never comes (for timeouts).
 * exit: normal, then exit(0) without MPI_Finalize (after a barrier): rank 0 first, the
 * others once rank 0's profile file is there (an event, not a duration). A launcher stops
 * the remaining ranks as soon as one exits without MPI_Finalize (Hydra's proxy: SIGKILL to
 * their process group at once), so a rank descheduled before its atexit handler ran left
 * no file; the order makes sure rank 0 is the one that ends by its own exit.
 * reset: normal, then MPI_Pcontrol(3) and 1 barrier.
 * abort: normal, then rank 0 calls MPI_Abort while the others wait in MPI_Barrier.
 * signal: normal, then rank 0 raises SIGTERM while the others wait in MPI_Barrier (the
 * launcher then stops them: Open MPI with SIGTERM, Hydra with SIGKILL).
 * threads: MPI_THREAD_MULTIPLE, 4 threads per rank, each 1000 x MPI_Send of 8 B to
 * MPI_PROC_NULL and 50 x MPI_Sendrecv of 16 B with the same thread of the other rank (tag =
 * thread index, MPI_STATUS_IGNORE: received sizes come from the profiler's own status).
 * manythreads: 70 threads per rank x 1000 MPI_Send of 8 B to MPI_PROC_NULL (more threads than
 * the profiler has private slots: the rest share the atomic overflow slot).
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int g_exchange, g_rank; /* threads mode: also Sendrecv with the other rank */

static void *sender(void *arg)
{
    int tag = (int)(long)arg;
    double x = 0;
    char s[16] = {0}, r[64];
    for (int i = 0; i < 1000; i++) MPI_Send(&x, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    if (g_exchange) {
        for (int i = 0; i < 50; i++)
            MPI_Sendrecv(s, 16, MPI_BYTE, 1 - g_rank, tag, r, 64, MPI_BYTE, 1 - g_rank, tag,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return NULL;
}

/* exit mode: until the profiler's file of rank 0 exists (written, then renamed into place,
 * by its atexit handler); the launcher may stop this rank first, which is fine */
static void wait_for_rank0_file(void)
{
    const char *dir = getenv("MPIBENCH_PROFILE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-0.json", dir && *dir ? dir : "mpibench-profile");
    struct timespec tick = {0, 10 * 1000 * 1000};
    while (access(path, F_OK) != 0) nanosleep(&tick, NULL);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "normal";
    int rank, n;
    if (strcmp(mode, "threads") == 0 || strcmp(mode, "manythreads") == 0) {
        int provided, nt = mode[0] == 't' ? 4 : 70;
        g_exchange = mode[0] == 't';
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
        if (provided < MPI_THREAD_MULTIPLE || n != 2) {
            fprintf(stderr, "MPI_THREAD_MULTIPLE not provided, or not 2 ranks\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        pthread_t t[70];
        for (int i = 0; i < nt; i++) pthread_create(&t[i], NULL, sender, (void *)(long)i);
        for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
        MPI_Finalize();
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2) {
        fprintf(stderr, "known_calls needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static char buf[4096];
    static int ibuf[5][512];
    MPI_Request req[5];
    MPI_Status st[5]; /* not MPI_STATUSES_IGNORE: gcc 12 misreads MPICH's (MPI_Status *)1 */
    if (rank == 0) {
        for (int i = 0; i < 10; i++) MPI_Send(buf, 1000, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        for (int i = 0; i < 5; i++) MPI_Irecv(ibuf[i], 512, MPI_INT, 1, 2, MPI_COMM_WORLD, &req[i]);
        MPI_Waitall(5, req, st);
    } else if (rank == 1) {
        for (int i = 0; i < 10; i++)
            MPI_Recv(buf, 4096, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 5; i++) MPI_Isend(ibuf[i], 256, MPI_INT, 0, 2, MPI_COMM_WORLD, &req[i]);
        MPI_Waitall(5, req, st);
    }
    double in[100], out[100];
    for (int i = 0; i < 100; i++) in[i] = rank + i;
    for (int i = 0; i < 3; i++) MPI_Allreduce(in, out, 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int b[64] = {0};
    for (int i = 0; i < 2; i++) MPI_Bcast(b, 64, MPI_INT, 0, MPI_COMM_WORLD);
    int *sc = calloc(n, sizeof *sc), *rc = calloc(n, sizeof *rc);
    int *sd = calloc(n, sizeof *sd), *rd = calloc(n, sizeof *rd);
    int stot = 0, rtot = 0;
    for (int j = 0; j < n; j++) {
        sc[j] = rank * n + j + 1;
        rc[j] = j * n + rank + 1;
        sd[j] = stot;
        rd[j] = rtot;
        stot += sc[j];
        rtot += rc[j];
    }
    int *sb = calloc(stot, sizeof *sb), *rb = calloc(rtot, sizeof *rb);
    MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD);
    if (strcmp(mode, "pcontrol") == 0) {
        MPI_Pcontrol(2);
        MPI_Pcontrol(0);
        for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
        MPI_Pcontrol(1);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "hang") == 0) {
        MPI_Recv(buf, 1, MPI_BYTE, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (strcmp(mode, "exit") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank != 0) wait_for_rank0_file();
        exit(0);
    } else if (strcmp(mode, "reset") == 0) {
        MPI_Pcontrol(3);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "abort") == 0) {
        if (rank == 0) MPI_Abort(MPI_COMM_WORLD, 7);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "signal") == 0) {
        if (rank == 0) raise(SIGTERM);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
