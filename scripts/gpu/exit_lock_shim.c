// LD_PRELOAD diagnostic: which thread holds glibc's exit-function-list lock when a process forks
// (docs/collector.md, "fork() after the parent initialized CUDA"). It wraps the functions that take
// that lock (__cxa_atexit, __cxa_finalize, __cxa_at_quick_exit, on_exit) and dlclose, keeps a ring
// of their calls (thread, caller, enter, leave), and in each forked child reads the lock word
// (found from __cxa_atexit's code: x86-64 glibc 2.39's `lea x(%rip),%rbx ... lock cmpxchg`).
// Environment: SHIM_DIR (where files go), SHIM_CALLS=1 (every child's file, and each process's
// calls at exit), SHIM_RESET=1 (free a child's inherited lock so it can exit: checks the diagnosis).
//   gcc -shared -fPIC -O2 -o exit_lock_shim.so exit_lock_shim.c -ldl
//   SHIM_DIR=out SHIM_CALLS=1 LD_PRELOAD=$PWD/exit_lock_shim.so cuoverlap record -o t.sqlite -- ./app
// A child file named child-PID-HELD.txt lists the calls in flight in the parent at the fork.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int __cxa_atexit(void (*)(void*), void*, void*);
void __cxa_finalize(void*);
int __cxa_at_quick_exit(void (*)(void*), void*);

enum { kRing = 8192 };
struct Call { _Atomic long tid; int fn; void* caller; long enter_ns; _Atomic long leave_ns; };
static struct Call g_ring[kRing];
static _Atomic unsigned g_next;
static const char* const kNames[] = {"__cxa_atexit", "__cxa_finalize", "__cxa_at_quick_exit", "on_exit", "dlclose", "dlopen"};
static int* g_lock;

static long nowNs(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
static struct Call* enter(int fn, void* caller) {
  struct Call* c = &g_ring[atomic_fetch_add(&g_next, 1) % kRing];
  c->fn = fn; c->caller = caller; c->enter_ns = nowNs(); atomic_store(&c->leave_ns, 0);
  atomic_store(&c->tid, syscall(SYS_gettid));
  return c;
}
static void leave(struct Call* c) { atomic_store(&c->leave_ns, nowNs()); }

// The lock's address from __cxa_atexit's code: its first rip-relative lea.
static void findLock(void) {
  unsigned char* p = (unsigned char*)dlsym(RTLD_NEXT, "__cxa_atexit");
  if (!p) return;
  for (int i = 0; i < 64; ++i)
    if (p[i] == 0x48 && p[i + 1] == 0x8d && p[i + 2] == 0x1d && memmem(p + i + 7, 24, "\xf0\x0f\xb1\x13", 4)) {  // lea x(%rip),%rbx ... lock cmpxchg %edx,(%rbx)
      int32_t disp; memcpy(&disp, p + i + 3, 4);
      g_lock = (int*)(p + i + 7 + disp);
      return;
    }
}

#define REAL(name) static __typeof__(&name) real_##name; if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)
int __cxa_atexit(void (*f)(void*), void* arg, void* d) {
  REAL(__cxa_atexit);
  struct Call* c = enter(0, __builtin_return_address(0)); int r = real___cxa_atexit(f, arg, d); leave(c); return r;
}
void __cxa_finalize(void* d) {
  REAL(__cxa_finalize);
  struct Call* c = enter(1, __builtin_return_address(0)); real___cxa_finalize(d); leave(c);
}
int __cxa_at_quick_exit(void (*f)(void*), void* d) {
  REAL(__cxa_at_quick_exit);
  struct Call* c = enter(2, __builtin_return_address(0)); int r = real___cxa_at_quick_exit(f, d); leave(c); return r;
}
int on_exit(void (*f)(int, void*), void* arg) {
  REAL(on_exit);
  struct Call* c = enter(3, __builtin_return_address(0)); int r = real_on_exit(f, arg); leave(c); return r;
}
int dlclose(void* h) {
  REAL(dlclose);
  struct Call* c = enter(4, __builtin_return_address(0)); int r = real_dlclose(h); leave(c); return r;
}

static void where(void* address, char* out, size_t n) {
  Dl_info info;
  if (dladdr(address, &info) && info.dli_fname)
    snprintf(out, n, "%s+0x%lx%s%s", info.dli_fname, (unsigned long)((char*)address - (char*)info.dli_fbase),
             info.dli_sname ? " ~" : "", info.dli_sname ? info.dli_sname : "");
  else snprintf(out, n, "%p", address);
}

pid_t fork(void) {
  REAL(fork);
  long before = nowNs();
  pid_t pid = real_fork();
  if (pid != 0) return pid;
  if (!g_lock) findLock();
  int word = g_lock ? *g_lock : -1;
  const char* dir = getenv("SHIM_DIR");
  if (!dir || (word <= 0 && !getenv("SHIM_CALLS"))) return 0;
  char path[512], line[1024];
  snprintf(path, sizeof path, "%s/child-%d-%s.txt", dir, getpid(), word > 0 ? "HELD" : "free");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 0;
  int len = snprintf(line, sizeof line, "child %d parent %d exit-lock word %d\n", getpid(), getppid(), word);
  write(fd, line, len);
  unsigned n = atomic_load(&g_next);
  for (unsigned i = n > kRing ? n - kRing : 0; i < n; ++i) {
    struct Call* c = &g_ring[i % kRing];
    long left = atomic_load(&c->leave_ns);
    if (left != 0 && before - left > 50000000L) continue;  // calls done >50 ms before the fork: skip
    char at[600]; where(c->caller, at, sizeof at);
    len = snprintf(line, sizeof line, "  %s tid %ld %s enter %+.3f ms leave %s%.3f ms\n", kNames[c->fn], atomic_load(&c->tid),
                   at, (c->enter_ns - before) / 1e6, left ? "" : "(in flight) ", left ? (left - before) / 1e6 : 0.0);
    write(fd, line, len);
  }
  len = snprintf(line, sizeof line, "calls recorded in parent: %u\n", n);
  write(fd, line, len);
  close(fd);
  if (word > 0 && getenv("SHIM_RESET")) *g_lock = 0;  // lets the child exit (checks the diagnosis)
  return 0;
}

__attribute__((destructor)) static void summary(void) {
  const char* dir = getenv("SHIM_DIR");
  if (!dir || !getenv("SHIM_CALLS")) return;
  char path[512], line[1024];
  snprintf(path, sizeof path, "%s/calls-%d.txt", dir, getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  unsigned n = atomic_load(&g_next);
  for (unsigned i = n > kRing ? n - kRing : 0; i < n; ++i) {
    struct Call* c = &g_ring[i % kRing];
    char at[600]; where(c->caller, at, sizeof at);
    long left = atomic_load(&c->leave_ns);
    int len = snprintf(line, sizeof line, "%s tid %ld %s dur %.3f us\n", kNames[c->fn], atomic_load(&c->tid), at,
                       left ? (left - c->enter_ns) / 1e3 : -1.0);
    write(fd, line, len);
  }
  close(fd);
}
