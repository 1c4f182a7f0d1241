# 1 "odd.c"
#define MPI_VERSION 4
#define MPI_SUBVERSION 0
typedef struct { int a; } MPI_Status;
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef long MPI_Count;
static inline int helper(int x) { return x + 1; }
__attribute__((visibility("default"))) int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest,
    int tag, MPI_Comm comm) __attribute__((nonnull(1)));
int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int PMPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Group_range_incl(int group, int n, int ranges[][3], int *newgroup);
int PMPI_Group_range_incl(int group, int n, int ranges[][3], int *newgroup);
int MPI_Unnamed(MPI_Comm, int *);
int PMPI_Unnamed(MPI_Comm, int *);
int MPI_Keyval(int (*copy_fn)(int, void *), void *extra);
int PMPI_Keyval(int (*copy_fn)(int, void *), void *extra);
int MPI_No_pmpi(int x);
double MPI_Wtime(void);
double PMPI_Wtime(void);
int MPI_Recv(void *buf, long count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status);
int PMPI_Recv(void *buf, long count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Bcast(void *buffer, int count, int datatype, int root, MPI_Comm comm);
int PMPI_Bcast(void *buffer, int count, int datatype, int root, MPI_Comm comm);
int MPI_Init(int *argc, char ***argv); int PMPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int r, int *p); int PMPI_Init_thread(int *argc, char ***argv, int r, int *p);
int MPI_Finalize(void); int PMPI_Finalize(void);
int MPI_Abort(MPI_Comm comm, int e); int PMPI_Abort(MPI_Comm comm, int e);
int MPI_Pcontrol(const int level, ...); int PMPI_Pcontrol(const int level, ...);
