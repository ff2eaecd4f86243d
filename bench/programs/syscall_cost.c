/* Cost of the calls a profile signal handler may make, in a tight loop
 * (ns per call): gettid, clock_gettime of the thread CPU clock (a system
 * call) and of CLOCK_MONOTONIC (vDSO), sched_getcpu (rseq), read(2) of a
 * perf count, an ioctl. usage: syscall_cost */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(void){
  struct perf_event_attr a; memset(&a,0,sizeof a); a.type=PERF_TYPE_SOFTWARE; a.size=sizeof a; a.config=PERF_COUNT_SW_CPU_CLOCK; a.exclude_kernel=1;
  int fd=syscall(SYS_perf_event_open,&a,0,-1,-1,0);
  const int N=200000; volatile unsigned long long acc=0; struct timespec ts; double t0,t1; unsigned long long v;
  for(int rep=0;rep<3;rep++){
  t0=now(); for(int i=0;i<N;i++) acc+=syscall(SYS_gettid); t1=now(); printf("gettid syscall %6.0f ns\n",(t1-t0)/N*1e9);
  t0=now(); for(int i=0;i<N;i++){clock_gettime(CLOCK_THREAD_CPUTIME_ID,&ts);acc+=ts.tv_nsec;} t1=now(); printf("clock_gettime THREAD_CPUTIME %6.0f ns\n",(t1-t0)/N*1e9);
  t0=now(); for(int i=0;i<N;i++){clock_gettime(CLOCK_MONOTONIC,&ts);acc+=ts.tv_nsec;} t1=now(); printf("clock_gettime MONOTONIC %6.0f ns\n",(t1-t0)/N*1e9);
  t0=now(); for(int i=0;i<N;i++) acc+=sched_getcpu(); t1=now(); printf("sched_getcpu %6.0f ns\n",(t1-t0)/N*1e9);
  t0=now(); for(int i=0;i<N;i++){ if(read(fd,&v,8)==8) acc+=v;} t1=now(); printf("read perf fd %6.0f ns\n",(t1-t0)/N*1e9);
  t0=now(); for(int i=0;i<N;i++) acc+=ioctl(fd,PERF_EVENT_IOC_REFRESH,0); t1=now(); printf("ioctl (einval) %6.0f ns\n",(t1-t0)/N*1e9);
  }
  return 0;}
