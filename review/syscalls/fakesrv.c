/* fake randd: modes
 *  hang      : accept, read requests, never reply
 *  echo      : reply OK with n bytes of 0xAB to BYTES requests
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <pthread.h>
#include <stdint.h>
static const char *mode;
static void *serve(void *arg) {
    int c = (int)(intptr_t)arg; unsigned char buf[65536];
    for (;;) {
        unsigned char h[8]; ssize_t r = recv(c, h, 8, MSG_WAITALL);
        if (r != 8) break;
        uint32_t len = (uint32_t)h[4]<<24|h[5]<<16|h[6]<<8|h[7];
        if (len && recv(c, buf, len, MSG_WAITALL) != (ssize_t)len) break;
        if (!strcmp(mode, "hang")) continue;
        static __thread int served; if (!strcmp(mode, "once") && served++) continue;
        uint32_t n = (uint32_t)buf[0]<<24|buf[1]<<16|buf[2]<<8|buf[3];
        unsigned char *out = malloc(8 + n);
        out[0]=1; out[1]=0; out[2]=out[3]=0; out[4]=n>>24; out[5]=n>>16; out[6]=n>>8; out[7]=n;
        memset(out+8, 0xAB, n);
        send(c, out, 8+n, MSG_NOSIGNAL); free(out);
    }
    close(c); return NULL;
}
int main(int argc, char **argv) {
    mode = argv[2]; signal(SIGPIPE, SIG_IGN);
    int s = socket(AF_UNIX, SOCK_STREAM, 0); struct sockaddr_un sa = {AF_UNIX};
    strcpy(sa.sun_path, argv[1]); unlink(argv[1]);
    if (bind(s, (void*)&sa, sizeof sa) || listen(s, 16)) { perror("bind"); return 1; }
    printf("ready\n"); fflush(stdout);
    for (;;) { int c = accept(s, 0, 0); if (c < 0) continue; pthread_t t; pthread_create(&t, 0, serve, (void*)(intptr_t)c); pthread_detach(t); }
}
