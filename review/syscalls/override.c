/* The program (or anything sharing the socket) changes SO_RCVTIMEO on the handle's socket
 * after librandd set it: the cached value is trusted, and a call under a 200 ms timeout
 * blocks in recvmsg for as long as the new option says. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include "randd.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int argc,char**argv){
  randd_handle *h; unsigned char b[32];
  if (randd_open(&h,argv[1])) return 1;
  randd_set_timeout(h,200);
  double s=now(); int rc=randd_bytes(h,b,32); printf("before: rc=%d took %.0f ms\n",rc,now()-s);
  for (int fd=3; fd<64; fd++){ struct stat st; if(fstat(fd,&st)==0 && S_ISSOCK(st.st_mode)){
      struct timeval tv={atoi(argv[2]),0}; setsockopt(fd,SOL_SOCKET,SO_RCVTIMEO,&tv,sizeof tv); printf("set SO_RCVTIMEO=%ld s on fd %d\n",(long)tv.tv_sec,fd);} }
  s=now(); rc=randd_bytes(h,b,32); printf("after:  rc=%d took %.0f ms (timeout 200 ms)\n",rc,now()-s);
  return 0;}
