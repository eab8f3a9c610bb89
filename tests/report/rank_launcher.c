/* tests/report/rank_launcher.c: a small launcher, as torchrun is one: starts N copies of a command, each
 * with RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE set, waits for them all, and exits 0 only if
 * every one did. --env-for R NAME=VALUE sets a variable in rank R only (a test's clock offset).
 * usage: rank_launcher [--env-for R NAME=VALUE]... N -- CMD [ARGS...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv)
{
    int i = 1, only[16], n = 0;
    char* vars[16];
    int extra = 0;
    while (i + 2 < argc && strcmp(argv[i], "--env-for") == 0 && extra < 16) {
        only[extra] = atoi(argv[i + 1]);
        vars[extra++] = argv[i + 2];
        i += 3;
    }
    if (i + 2 >= argc || strcmp(argv[i + 1], "--") != 0) {
        fprintf(stderr, "usage: rank_launcher [--env-for R NAME=VALUE]... N -- CMD [ARGS...]\n");
        return 2;
    }
    n = atoi(argv[i]);
    char** cmd = argv + i + 2;
    pid_t pids[64];
    if (n < 1 || n > 64) return 2;
    for (int r = 0; r < n; ++r) {
        pids[r] = fork();
        if (pids[r] < 0) return 1;
        if (pids[r] == 0) {
            char num[16], size[16];
            snprintf(num, sizeof num, "%d", r);
            snprintf(size, sizeof size, "%d", n);
            setenv("RANK", num, 1);
            setenv("LOCAL_RANK", num, 1);
            setenv("WORLD_SIZE", size, 1);
            setenv("LOCAL_WORLD_SIZE", size, 1);
            for (int k = 0; k < extra; ++k)
                if (only[k] == r) putenv(vars[k]);
            execvp(cmd[0], cmd);
            perror(cmd[0]);
            _exit(127);
        }
    }
    int failed = 0;
    for (int r = 0; r < n; ++r) {
        int status = 0;
        if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "rank_launcher: rank %d failed (status %d)\n", r, status);
            failed = 1;
        }
    }
    return failed;
}
