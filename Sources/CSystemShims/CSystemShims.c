// The shims that need a C library header Swift should not see (spawn.h: its types belong to Glibc's module).

#ifdef __linux__
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#endif
#include <errno.h>
#include <spawn.h>

int csystem_spawn_close_from(void *actions, int from) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, from);
#else
    (void)actions; (void)from;
    return ENOSYS;
#endif
}
