// Runs before any test: the test process catches SIGPIPE instead of dying of it.
//
// Tests talk to servers, children and X displays over sockets and pipes. A write to one whose peer
// has gone raises SIGPIPE, and its default action ends the whole test process, every suite with it,
// with no word of which test wrote. A caught signal (unlike an ignored one) is reset to its default
// action by exec, so the children tests start still see SIGPIPE as programs normally do; here the
// write fails with EPIPE instead, which the writer reports.
#include "TestProcessSetup.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static atomic_long sigpipe_count;

static void note_sigpipe(int signal_number) {
    (void)signal_number;
    atomic_fetch_add(&sigpipe_count, 1);
    static const char message[] = "test process: SIGPIPE caught (a write to a closed pipe or socket failed with EPIPE)\n";
    ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
    (void)ignored;
}

__attribute__((constructor)) static void catch_sigpipe(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note_sigpipe;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGPIPE, &action, NULL);
}

long guardplay_test_sigpipe_count(void) { return atomic_load(&sigpipe_count); }
