#define _GNU_SOURCE
#include <stdio.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void){
  int *p = mmap(0,4096,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  int rc = madvise(p,4096,MADV_WIPEONFORK); *p = getpid();
  long c = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (c == 0) { printf("madvise rc=%d; raw clone child sees cached pid %d (0 = wiped), its pid %d\n", rc, *p, getpid()); fflush(stdout); _exit(0);}
  waitpid(c,0,0); return 0;}
