// tp_launch: a small launcher for one-process-per-GPU jobs, as torchrun starts a tensor-parallel server's workers
// on one node. It starts N copies of PROGRAM (each with RANK, LOCAL_RANK and WORLD_SIZE set), passes the NCCL
// unique id from rank 0 to the others (rank 0 writes it to the pipe in TP_ID_OUT_FD; the launcher copies it to
// each other rank's pipe, TP_ID_IN_FD), waits for all, and exits with the first failing rank's status (128 +
// the signal for a rank killed by one), 0 when every rank succeeded.
// With --visible-devices (or TP_VISIBLE_DEVICES=1 in its environment) it gives each rank one GPU as Slurm's gres,
// vLLM and other launchers do: CUDA_VISIBLE_DEVICES=<local rank>, or the local rank's entry of the launcher's own
// CUDA_VISIBLE_DEVICES when that is set; the rank then uses its device 0.
// usage: tp_launch [--visible-devices] N PROGRAM [ARGS...]
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kMaxRanks = 16, kIdBytes = 128 };  // sizeof(ncclUniqueId)

static void setInt(const char* name, int v)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

// The rank's CUDA_VISIBLE_DEVICES: entry r of the launcher's list if it has one (entry r missing: r), else r.
static void setVisibleDevice(const char* inherited, int r)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%d", r);
    if (inherited) {
        const char* p = inherited;
        for (int i = 0; i < r && p; ++i) {
            p = strchr(p, ',');
            if (p) ++p;
        }
        if (p && *p) {
            const size_t len = strcspn(p, ",");
            if (len < sizeof buf) snprintf(buf, sizeof buf, "%.*s", (int)len, p);
        }
    }
    setenv("CUDA_VISIBLE_DEVICES", buf, 1);
}

int main(int argc, char** argv)
{
    const char* tv = getenv("TP_VISIBLE_DEVICES");
    int visible = tv && atoi(tv) != 0;
    if (argc > 1 && strcmp(argv[1], "--visible-devices") == 0) {
        visible = 1;
        ++argv;
        --argc;
    }
    if (argc < 3 || atoi(argv[1]) < 1 || atoi(argv[1]) > kMaxRanks) {
        fprintf(stderr, "usage: %s [--visible-devices] N PROGRAM [ARGS...]   (1 <= N <= %d)\n", argv[0], kMaxRanks);
        return 2;
    }
    const char* inheritedVisible = getenv("CUDA_VISIBLE_DEVICES");
    const int n = atoi(argv[1]);
    int idOut[2];  // rank 0 -> launcher
    int idIn[kMaxRanks][2];  // launcher -> rank r (r > 0)
    if (pipe(idOut) != 0) return perror("tp_launch: pipe"), 1;
    for (int r = 1; r < n; ++r)
        if (pipe(idIn[r]) != 0) return perror("tp_launch: pipe"), 1;
    pid_t pids[kMaxRanks];
    for (int r = 0; r < n; ++r) {
        pids[r] = fork();
        if (pids[r] < 0) return perror("tp_launch: fork"), 1;
        if (pids[r] > 0) continue;
        // The child keeps only its own end of the id's pipe.
        close(idOut[0]);
        if (r == 0) setInt("TP_ID_OUT_FD", idOut[1]);
        else close(idOut[1]);
        for (int q = 1; q < n; ++q) {
            close(idIn[q][1]);
            if (q == r) setInt("TP_ID_IN_FD", idIn[q][0]);
            else close(idIn[q][0]);
        }
        setInt("RANK", r);
        setInt("LOCAL_RANK", r);
        setInt("WORLD_SIZE", n);
        if (visible) setVisibleDevice(inheritedVisible, r);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "tp_launch: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    close(idOut[1]);
    for (int r = 1; r < n; ++r) close(idIn[r][0]);
    // The id, once rank 0 wrote it; a rank 0 that failed first closes its pipe early and the others see the
    // short id on theirs.
    char id[kIdBytes];
    size_t got = 0;
    while (got < sizeof id) {
        const ssize_t k = read(idOut[0], id + got, sizeof id - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(idOut[0]);
    signal(SIGPIPE, SIG_IGN);  // a rank that already ended leaves a pipe nobody reads
    for (int r = 1; r < n; ++r) {
        if (got == sizeof id && write(idIn[r][1], id, sizeof id) != (ssize_t)sizeof id)
            fprintf(stderr, "tp_launch: passing the id to rank %d: %s\n", r, strerror(errno));
        close(idIn[r][1]);
    }
    int status = 0;
    for (int left = n; left > 0; --left) {
        int st = 0;
        const pid_t p = wait(&st);
        if (p < 0) {
            if (errno == EINTR) { ++left; continue; }
            break;
        }
        int rank = -1;
        for (int r = 0; r < n; ++r)
            if (pids[r] == p) rank = r;
        const int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
        if (code != 0) {
            fprintf(stderr, "tp_launch: rank %d (pid %d) ended with status %d\n", rank, (int)p, code);
            if (status == 0) status = code;
        }
    }
    return status;
}
