/* The program the signal tests debug: it installs handlers for SIGUSR1 (raised), SIGALRM (an
 * interval timer) and SIGCHLD (a child it forks) and prints what each handler saw, so that its
 * output under the debugger can be compared with its output without one. `signals segv` writes
 * through a bad pointer and dies by SIGSEGV (no handler). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t usr1_seen, alrm_seen, chld_seen;
static volatile int usr1_code, usr1_from_self, alrm_code, chld_code, chld_status, chld_pid;

__attribute__((noinline)) void on_usr1(int signo, siginfo_t* info, void* context) {
  (void)context;
  usr1_code = info->si_code;
  usr1_from_self = info->si_pid == getpid();
  usr1_seen = signo;
}

__attribute__((noinline)) void on_alrm(int signo, siginfo_t* info, void* context) {
  (void)context;
  alrm_code = info->si_code;
  alrm_seen = signo;
}

__attribute__((noinline)) void on_chld(int signo, siginfo_t* info, void* context) {
  (void)context;
  chld_code = info->si_code;
  chld_status = info->si_status;
  chld_pid = info->si_pid;
  chld_seen = signo;
}

static void install(int signo, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signo, &action, NULL) != 0) {
    perror("sigaction");
    exit(2);
  }
}

/* Waits (signals blocked outside the wait, so none is missed) until `flag` is set, or 10 s. */
static void wait_for(volatile sig_atomic_t* flag, const sigset_t* during) {
  for (int rounds = 0; !*flag && rounds < 100; ++rounds) {
    sigsuspend(during);
  }
}

__attribute__((noinline)) void crash(volatile int* where) { *where = 1; }

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc > 1 && strcmp(argv[1], "segv") == 0) {
    printf("about to fault\n");
    crash((volatile int*)0x10);
    printf("not reached\n");
    return 0;
  }
  install(SIGUSR1, on_usr1);
  install(SIGALRM, on_alrm);
  install(SIGCHLD, on_chld);

  sigset_t blocked, during;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGALRM);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, &during);
  sigdelset(&during, SIGALRM);
  sigdelset(&during, SIGCHLD);

  raise(SIGUSR1);
  if (usr1_seen) {
    printf("usr1: signo=%d code=%d from_self=%d\n", (int)usr1_seen, usr1_code, usr1_from_self);
  } else {
    printf("usr1: the handler did not run\n");
  }

  struct itimerval timer = {{0, 0}, {0, 50000}};
  setitimer(ITIMER_REAL, &timer, NULL);
  wait_for(&alrm_seen, &during);
  printf("alrm: signo=%d code=%d\n", (int)alrm_seen, alrm_code);

  const pid_t child = fork();
  if (child == 0) _exit(7);
  wait_for(&chld_seen, &during);
  int status = 0;
  waitpid(child, &status, 0);
  printf("chld: signo=%d code=%d status=%d child_matches=%d\n", (int)chld_seen, chld_code, chld_status,
         chld_pid == child);
  printf("done\n");
  return 0;
}
