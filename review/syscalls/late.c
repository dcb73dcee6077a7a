#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "randd.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int argc,char**argv){
  randd_handle *h; int rc=randd_open(&h, argv[1]); if(rc){printf("open %d %s\n",rc,randd_message(NULL));return 1;}
  for(int i=2;i<argc;i++){ int t=atoi(argv[i]); unsigned char b[32];
    randd_set_timeout(h,t);
    /* a first call on the connection sets SO_RCVTIMEO; repeat 3 times */
    for(int k=0;k<3;k++){ double s=now(); rc=randd_bytes(h,b,32); double e=now()-s;
      printf("timeout %5d ms: rc=%d (%s) took %.1f ms  late by %+.1f ms\n",t,rc,randd_strerror(rc),e,e-t);}
  }
  randd_close(h); return 0;}
