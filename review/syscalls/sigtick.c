/* A program with a periodic signal (a profiler's SIGPROF, a SIGALRM tick) calls randd_bytes
 * with a 300 ms timeout against a daemon that does not answer. */
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include "randd.h"
static void tick(int s){(void)s;}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
int main(int argc,char**argv){
  int period_us = atoi(argv[2]);
  struct sigaction sa; memset(&sa,0,sizeof sa); sa.sa_handler=tick; sa.sa_flags=SA_RESTART; sigaction(SIGALRM,&sa,0);
  randd_handle *h; if(randd_open(&h,argv[1])) return 1;
  randd_set_timeout(h,300);
  struct itimerval it={{0,period_us},{0,period_us}}; setitimer(ITIMER_REAL,&it,0);
  unsigned char b[32]; double s=now(); int rc=randd_bytes(h,b,32);
  printf("tick every %d us, timeout 300 ms: rc=%d took %.0f ms\n",period_us,rc,now()-s); return 0;}
