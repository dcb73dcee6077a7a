#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
int main(void){
  char *p = mmap(0,4096,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  madvise(p,4096,MADV_WIPEONFORK);
  FILE *f=fopen("/proc/self/smaps","r"); char l[512], want[64]; int in=0, found=0;
  snprintf(want,sizeof want,"%lx-",(unsigned long)p);
  while(fgets(l,sizeof l,f)){ if(strchr(l,'-')&&strstr(l," rw")) in = !strncmp(l,want,strlen(want));
    if(in && !strncmp(l,"VmFlags:",8)){ printf("page %p %s",p,l); found=1;} }
  if(!found) printf("page %p: no VmFlags line found\n",p); return 0;}
