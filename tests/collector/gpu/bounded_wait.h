// Waiting for a traced program in the GPU tests without waiting forever: a run that does not end
// in time has its process tree described (each thread's wait channel and system call, and a
// debugger's backtrace where gdb or cuda-gdb is installed) on stderr, and is killed.
#pragma once

#include <sys/types.h>

#include <string>

// The exit code when the process ended, 1000 + N when signal N ended it, kHungExit when it was
// still running after `seconds` (then killed, with every process under it). CUOVERLAP_TEST_HANG_S
// overrides `seconds` (to catch a rare hang in a loop of short runs).
constexpr int kHungExit = 2000;
int waitBounded(pid_t pid, int seconds);

// The process tree under `root` (root included): for each process its command line, and for
// each of its threads the wait channel and /proc's system-call line.
std::string describeProcessTree(pid_t root);
