// LD_PRELOAD diagnostic: on SIGSEGV, SIGBUS, SIGABRT or SIGILL, the faulting thread's backtrace
// (glibc backtrace_symbols_fd: library+offset for stripped libraries such as libnvperf_host) and
// the thread's id on stderr, then the signal's default action (the exit status is unchanged).
// Used to find where GPU-metrics runs crashed at exit (docs/collector.md, "GPU metrics").
//   gcc -shared -fPIC -O2 -o fault_backtrace_shim.so fault_backtrace_shim.c
//   LD_PRELOAD=$PWD/fault_backtrace_shim.so cuoverlap record -o t.sqlite -- ./app
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void onFault(int sig, siginfo_t* info, void* context) {
  (void)context;
  char line[160];
  int n = snprintf(line, sizeof line, "\nfault_backtrace_shim: signal %d (%s) at %p in thread %ld of pid %d\n",
                   sig, strsignal(sig), info->si_addr, (long)syscall(SYS_gettid), (int)getpid());
  if (n > 0 && write(2, line, (size_t)n) < 0) n = 0;  // stderr gone: the signal still ends the process
  void* frames[64];
  int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc_s now, not inside the handler
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = onFault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  int signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL};
  for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; ++i) sigaction(signals[i], &action, NULL);
}
