#ifndef GUARDPLAY_TEST_PROCESS_SETUP_H
#define GUARDPLAY_TEST_PROCESS_SETUP_H

/// How many SIGPIPEs the test process has taken (and survived) since it started.
long guardplay_test_sigpipe_count(void);

#endif
