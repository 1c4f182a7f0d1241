/* Exactly 2 ranks: one or more calls of each family with known sizes, so the byte rules can
 * be checked per rank (tests/profile/test_profiler.py::test_coverage_bytes). argv[1]: a directory for
 * the MPI-IO file. Arguments the standard says are ignored are passed as garbage on purpose
 * (MPI_DATATYPE_NULL receive type at a Gather non-root): the profiler must not touch them. */
#include <mpi.h>
#include <stdio.h>

/* gcc 12 takes MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) for a zero-size array; passing
 * it is the point here (the profiler substitutes its own statuses). */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include <string.h>

int main(int argc, char **argv)
{
    int r, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2 || argc < 2) {
        fprintf(stderr, "coverage: needs exactly 2 ranks and a directory argument\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int p = 1 - r;
    MPI_Comm w = MPI_COMM_WORLD;
    static char cb[4096], cb2[4096];
    static int ib[256], ib2[256];
    static double db[64], db2[64];
    MPI_Request rq[4];
    MPI_Status st[4];

    MPI_Sendrecv(cb, 100, MPI_BYTE, p, 1, cb2, 100, MPI_BYTE, p, 1, w, MPI_STATUS_IGNORE);
    if (r == 0)
        MPI_Gather(ib, 10, MPI_INT, ib2, 10, MPI_INT, 0, w);
    else
        MPI_Gather(ib, 10, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, w);
    int gcounts[2] = {1, 2}, gdispl[2] = {0, 1};
    MPI_Gatherv(ib, r + 1, MPI_INT, ib2, gcounts, gdispl, MPI_INT, 0, w);
    MPI_Scatter(ib, 10, MPI_INT, ib2, 10, MPI_INT, 0, w);
    MPI_Scatterv(ib, gcounts, gdispl, MPI_INT, ib2, r + 1, MPI_INT, 0, w);
    MPI_Allgather(ib, 5, MPI_INT, ib2, 5, MPI_INT, w);
    MPI_Allgatherv(ib, r + 1, MPI_INT, ib2, gcounts, gdispl, MPI_INT, w);
    MPI_Alltoall(ib, 3, MPI_INT, ib2, 3, MPI_INT, w);
    /* rank 0 sends one int to each rank, rank 1 one double: per-peer receive types */
    int wc[2] = {1, 1}, wd[2] = {0, 16};
    MPI_Datatype mine = r == 0 ? MPI_INT : MPI_DOUBLE;
    MPI_Datatype wst[2] = {mine, mine}, wrt[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Alltoallw(cb, wc, wd, wst, cb2, wc, wd, wrt, w);
    MPI_Reduce(db, db2, 7, MPI_DOUBLE, MPI_SUM, 1, w);
    MPI_Reduce_scatter_block(ib, ib2, 4, MPI_INT, MPI_SUM, w);
    int rsc[2] = {1, 3};
    MPI_Reduce_scatter(ib, ib2, rsc, MPI_INT, MPI_SUM, w);
    MPI_Scan(db, db2, 2, MPI_DOUBLE, MPI_SUM, w);
    MPI_Allreduce(MPI_IN_PLACE, ib, 10, MPI_INT, MPI_SUM, w);
    MPI_Ibcast(cb, 50, MPI_BYTE, 0, w, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Iallreduce(ib, ib2, 4, MPI_INT, MPI_SUM, w, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);

    /* persistent: 3 starts of a 64 B message each way */
    MPI_Send_init(cb, 64, MPI_BYTE, p, 2, w, &rq[0]);
    MPI_Recv_init(cb2, 64, MPI_BYTE, p, 2, w, &rq[1]);
    for (int i = 0; i < 3; i++) {
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, st);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);

    /* probe + receive, matched probe + matched receive */
    MPI_Isend(cb, 33, MPI_BYTE, p, 3, w, &rq[0]);
    MPI_Probe(p, 3, w, &st[1]);
    MPI_Recv(cb2, 4096, MPI_BYTE, p, 3, w, &st[1]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Isend(cb, 17, MPI_BYTE, p, 4, w, &rq[0]);
    MPI_Message msg;
    MPI_Mprobe(p, 4, w, &msg, &st[1]);
    MPI_Mrecv(cb2, 4096, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);

    /* non-blocking receives of 64 B buffers, completed by each kind of completion call;
     * 5, 10, 20, 30 and 40 B arrive (the profiler learns the sizes at completion) */
    MPI_Request sr[5], rr[5];
    int sizes[5] = {5, 10, 20, 30, 40};
    for (int i = 0; i < 5; i++) {
        MPI_Irecv(cb2 + 64 * i, 64, MPI_BYTE, p, 10 + i, w, &rr[i]);
        MPI_Isend(cb, sizes[i], MPI_BYTE, p, 10 + i, w, &sr[i]);
    }
    int flag = 0, idx, outc, inds[3];
    MPI_Status sts[3];
    while (!flag) MPI_Test(&rr[0], &flag, MPI_STATUS_IGNORE);
    MPI_Wait(&rr[1], MPI_STATUS_IGNORE);
    MPI_Waitany(3, &rr[2], &idx, MPI_STATUS_IGNORE);
    MPI_Waitsome(3, &rr[2], &outc, inds, sts);
    MPI_Waitall(3, &rr[2], MPI_STATUSES_IGNORE);
    MPI_Waitall(5, sr, MPI_STATUSES_IGNORE);

    /* one-sided */
    MPI_Win win;
    MPI_Win_create(ib2, sizeof ib2, sizeof(int), MPI_INFO_NULL, w, &win);
    MPI_Win_fence(0, win);
    if (r == 0) MPI_Put(ib, 10, MPI_INT, 1, 0, 10, MPI_INT, win);
    if (r == 1) MPI_Get(ib, 5, MPI_INT, 0, 0, 5, MPI_INT, win);
    MPI_Win_fence(0, win);
    int one = 1, old = 0;
    MPI_Fetch_and_op(&one, &old, MPI_INT, p, 20, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    /* MPI-IO: each rank its own file */
    char path[4096];
    snprintf(path, sizeof path, "%s/cov-%d.dat", argv[1], r);
    MPI_File fh;
    MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, 0, cb, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_read_at(fh, 0, cb2, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);

    /* communicators */
    MPI_Comm c1, c2;
    MPI_Comm_split(w, r, 0, &c1);
    MPI_Comm_dup(w, &c2);
    MPI_Comm_free(&c1);
    MPI_Comm_free(&c2);

    /* intercommunicator: group A = rank 0, group B = rank 1 */
    MPI_Comm half, inter;
    MPI_Comm_split(w, r, 0, &half);
    MPI_Intercomm_create(half, 0, w, p, 6, &inter);
    MPI_Bcast(cb, 40, MPI_BYTE, r == 0 ? MPI_ROOT : 0, inter);
    MPI_Allgather(ib, 2, MPI_INT, ib2, 2, MPI_INT, inter);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);

    /* neighbourhood collectives: a 1-D Cartesian line (rank 0's neighbours are MPI_PROC_NULL
     * and 1, rank 1's are 0 and MPI_PROC_NULL: blocks for MPI_PROC_NULL move nothing), a ring
     * of two (both neighbours are the other rank) and a distributed graph with one edge each
     * way */
    MPI_Comm c_line, c_ring, c_graph;
    int two = 2, nonperiodic = 0, periodic = 1, weight = 1; /* (gcc 12 misreads Open MPI's
                                                                MPI_UNWEIGHTED as int[0]) */
    MPI_Cart_create(w, 1, &two, &nonperiodic, 0, &c_line);
    MPI_Cart_create(w, 1, &two, &periodic, 0, &c_ring);
    MPI_Dist_graph_create_adjacent(w, 1, &p, &weight, 1, &p, &weight, MPI_INFO_NULL, 0,
                                   &c_graph);
    MPI_Neighbor_allgather(ib, 3, MPI_INT, ib2, 3, MPI_INT, c_line);
    MPI_Neighbor_alltoall(ib, 2, MPI_INT, ib2, 2, MPI_INT, c_ring);
    /* rank 0 sends 1 int to rank 1, rank 1 sends 2 ints to rank 0; 5, 7, 9: MPI_PROC_NULL */
    int lsc[2] = {r == 0 ? 5 : 2, r == 0 ? 1 : 7}, lrc[2] = {r == 0 ? 9 : 1, r == 0 ? 2 : 9};
    int lsd[2] = {0, 16}, lrd[2] = {0, 16};
    MPI_Neighbor_alltoallv(ib, lsc, lsd, MPI_INT, ib2, lrc, lrd, MPI_INT, c_line);
    /* rank 0 sends 3 ints, rank 1 one double */
    int gsc = r == 0 ? 3 : 1, grc = r == 0 ? 1 : 3;
    MPI_Aint gdis = 0;
    MPI_Datatype gst = r == 0 ? MPI_INT : MPI_DOUBLE, grt = r == 0 ? MPI_DOUBLE : MPI_INT;
    MPI_Neighbor_alltoallw(cb, &gsc, &gdis, &gst, cb2, &grc, &gdis, &grt, c_graph);
    int gac = 2 - r, gad = 0; /* rank r contributes r + 1 ints */
    MPI_Ineighbor_allgatherv(ib, r + 1, MPI_INT, ib2, &gac, &gad, MPI_INT, c_graph, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Comm_free(&c_graph);
    MPI_Comm_free(&c_ring);
    MPI_Comm_free(&c_line);

#if MPI_VERSION >= 4
    /* MPI-4 large-count entry points (MPICH 4.0 has them, Open MPI 4.1 does not) */
    MPI_Count big = 300;
    if (r == 0) MPI_Send_c(cb, big, MPI_BYTE, 1, 5, w);
    if (r == 1) MPI_Recv_c(cb2, 4096, MPI_BYTE, 0, 5, w, MPI_STATUS_IGNORE);
    /* MPI-4 MPI_Isendrecv: rank 0 sends 10 B and gets 11, then sends nothing and gets 20;
     * rank 1 the other way round. Isendrecv_replace: 5 B each way. The received sizes stay
     * unknown: MPICH 4.0.2 leaves the status of a completed Isendrecv request unset. */
    MPI_Isendrecv(cb, 10 + r, MPI_BYTE, p, 7, cb2, 64, MPI_BYTE, p, 7, w, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Isendrecv(cb, 20 * r, MPI_BYTE, p, 8, cb2, 64, MPI_BYTE, p, 8, w, &rq[0]);
    MPI_Waitall(1, rq, MPI_STATUSES_IGNORE);
    MPI_Isendrecv_replace(cb, 5, MPI_BYTE, p, 9, p, 9, w, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
#endif
    MPI_Finalize();
    return 0;
}
