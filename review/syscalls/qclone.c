/* Under qemu-user (MADV_WIPEONFORK accepted and ignored), a child of a raw clone():
 * does its randd_bytes reconnect, and does its randd_rng start afresh? */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "randd.h"
static void socks(const char *who){ char l[4096]=""; for(int fd=0;fd<64;fd++){struct stat st; if(!fstat(fd,&st)&&S_ISSOCK(st.st_mode)) sprintf(l+strlen(l)," fd%d:ino%lu",fd,(unsigned long)st.st_ino);} printf("%s sockets:%s\n",who,l); }
static void hex(const char *who, const unsigned char *b){ printf("%s:",who); for(int i=0;i<16;i++) printf("%02x",b[i]); printf("\n"); }
int main(int argc,char**argv){
  randd_handle *h; randd_rng *rng; unsigned char b[32]; int p[2];
  struct randd_rng_options o = { .socket = argv[1] };
  if (randd_open(&h,argv[1]) || randd_bytes(h,b,32)) { puts("open failed"); return 1; }
  if (randd_rng_new(&rng,&o) || randd_rng_bytes(rng,b,32)) { puts("rng failed"); return 1; }
  socks("parent after its call");
  pipe(p); fflush(stdout);
  long c = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (c == 0) {
    int rc = randd_bytes(h,b,32); printf("child randd_bytes rc=%d\n",rc); socks("child after its call");
    randd_rng_bytes(rng,b,32); hex("child  rng", b); fflush(stdout); _exit(0);
  }
  waitpid(c,0,0);
  randd_rng_bytes(rng,b,32); hex("parent rng", b);
  return 0; }
