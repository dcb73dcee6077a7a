/* For tests/integration/test_provider.sh: RAND_bytes in a parent and in a forked child, with
 * OPENSSL_CONF naming randd.so as the seed source. Prints the bytes each drew and randd's
 * count of SEED requests at each step, so the test sees that the parent seeded from randd,
 * that the child reseeded from it while the parent only waited, and that their bytes
 * differ. Exit 0 when every step worked; 1 with what failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/rand.h>

#include "randd.h"

/* randd's count of SEED requests ("seed" under "requests" in STATUS), or -1. */
static long seed_requests(void)
{
    randd_handle *h;
    char *json = NULL;
    const char *at;
    long n = -1;

    if (randd_open(&h, NULL) < 0)
        return -1;
    if (randd_status(h, &json) > 0 && (at = strstr(json, "\"seed\":")))
        n = strtol(at + 7, NULL, 10);
    free(json);
    randd_close(h);
    return n;
}

static int draw(const char *who, unsigned char out[32], char hex[65])
{
    if (RAND_bytes(out, 32) != 1) {
        fprintf(stderr, "provider-fork: %s: RAND_bytes failed\n", who);
        ERR_print_errors_fp(stderr);
        return -1;
    }
    for (int i = 0; i < 32; i++)
        sprintf(hex + 2 * i, "%02x", out[i]);
    return 0;
}

int main(void)
{
    unsigned char parent[32], child[32];
    char parent_hex[65], child_hex[65];
    long before = seed_requests(), after_parent, after_child;
    int pipefd[2], status;
    pid_t pid;

    if (draw("parent", parent, parent_hex) < 0 || pipe(pipefd) < 0)
        return 1;
    after_parent = seed_requests();
    fflush(stdout);
    if ((pid = fork()) < 0)
        return 1;
    if (pid == 0) {
        int ok = draw("child", child, child_hex) == 0 &&
                 write(pipefd[1], child, sizeof(child)) == (ssize_t)sizeof(child);

        _exit(ok ? 0 : 1);
    }
    close(pipefd[1]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        read(pipefd[0], child, sizeof(child)) != (ssize_t)sizeof(child)) {
        fprintf(stderr, "provider-fork: the child failed\n");
        return 1;
    }
    after_child = seed_requests();
    for (int i = 0; i < 32; i++)
        sprintf(child_hex + 2 * i, "%02x", child[i]);
    if (draw("parent after the fork", parent, parent_hex) < 0)
        return 1;
    printf("parent %s\nchild %s\nseeds before %ld\nseeds after parent %ld\n"
           "seeds after child %ld\n", parent_hex, child_hex, before, after_parent, after_child);
    return 0;
}
