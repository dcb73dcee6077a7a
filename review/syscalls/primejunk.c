/* randd_prime against a peer whose reply is not what the header says: what is left in out. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "randd.h"
int randd_handle_from_fd(randd_handle **handle, int fd);
static void run(const char *what, const unsigned char *reply, size_t len){
  int sv[2]; randd_handle *h; unsigned char out[512]; memset(out,0,sizeof out);
  socketpair(AF_UNIX,SOCK_STREAM,0,sv); write(sv[1],reply,len);
  randd_handle_from_fd(&h,sv[0]); randd_set_timeout(h,500);
  int rc=randd_prime(h,4096,out); size_t nz=0; for(size_t i=0;i<sizeof out;i++) nz+=out[i]!=0;
  printf("%-50s rc=%d (%s): %zu of 512 bytes of out nonzero, out[0..3]=%02x%02x%02x%02x\n",what,rc,randd_strerror(rc),nz,out[0],out[1],out[2],out[3]);
  randd_close(h); close(sv[1]); }
int main(void){
  unsigned char r[8+600];
  memset(r,'y',sizeof r); r[0]=1;r[1]=8;r[2]=r[3]=0;r[4]=r[5]=r[6]=0;r[7]=4; memcpy(r+8,"abcd",4);
  run("error header (BUSY, 4 bytes) + 596 bytes more", r, sizeof r);
  memset(r,0x5a,sizeof r); r[0]=1;r[1]=0;r[2]=r[3]=0;r[4]=r[5]=0;r[6]=0;r[7]=100;
  run("OK header of 100 bytes (512 asked) + 100 bytes", r, 108);
  r[0]=2; r[1]=0; r[7]=200;
  run("version 2 header + 200 bytes", r, 208);
  return 0;}
