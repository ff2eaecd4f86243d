/* An MPI program of one rank (a singleton: started without mpirun) for a
 * collector loaded while it runs: MPI_Init, then `ready`, then it waits
 * for a line on stdin (rdbx attaches meanwhile and turns MPI tracing on),
 * then sends itself 300 bytes with MPI_Sendrecv (tag 5), MPI_Barrier,
 * MPI_Finalize, and `done`. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    char out[300] = {0}, in[300], line[16];
    MPI_Init(&argc, &argv);
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 1;
    MPI_Sendrecv(out, 300, MPI_BYTE, 0, 5, in, 300, MPI_BYTE, 0, 5, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    printf("done\n");
    return 0;
}
