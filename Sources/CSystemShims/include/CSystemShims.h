#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H
// Linux calls the Swift Glibc module does not import (the swift-nio CNIOLinux pattern).
#ifdef __linux__
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>

/// Names a thread (`pthread_setname_np`, a GNU extension; at most 15 bytes show).
static inline int csystem_set_thread_name(pthread_t thread, const char *name) {
    return pthread_setname_np(thread, name);
}

/// Inserts `length` bytes of hole at `offset`, shifting the rest of the file up without copying it
/// (`fallocate(FALLOC_FL_INSERT_RANGE)`; ext4 and XFS). Both must be multiples of the file
/// system's block size. Returns 0, or -1 with errno set (EOPNOTSUPP where unsupported).
static inline int csystem_insert_range(int fd, off_t offset, off_t length) {
    return fallocate(fd, FALLOC_FL_INSERT_RANGE, offset, length);
}

/// Starts writing back `length` bytes at `offset` without waiting for them
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`).
static inline int csystem_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

/// Allocates the first `length` bytes of a file's space without changing its size
/// (`fallocate(FALLOC_FL_KEEP_SIZE)`). Returns 0, or -1 with errno set.
static inline int csystem_reserve(int fd, off_t length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, length);
}
#else
#include <errno.h>
#include <sys/types.h>
#include <pthread.h>
static inline int csystem_set_thread_name(pthread_t thread, const char *name) {
    (void)thread; (void)name;
    return 0;
}
static inline int csystem_start_writeback(int fd, off_t offset, off_t length) {
    (void)fd; (void)offset; (void)length;
    return 0;
}
static inline int csystem_insert_range(int fd, off_t offset, off_t length) {
    (void)fd; (void)offset; (void)length;
    errno = ENOTSUP;
    return -1;
}
static inline int csystem_reserve(int fd, off_t length) {
    (void)fd; (void)length;
    errno = ENOTSUP;
    return -1;
}
#endif

/// Makes a `posix_spawn` close every descriptor from `from` up in the child (`actions`: a
/// `posix_spawn_file_actions_t`; `posix_spawn_file_actions_addclosefrom_np`, glibc 2.34):
/// sockets and files the parent opened without `O_CLOEXEC` (SwiftNIO's accepted connections
/// among them) are not inherited, so a connection the parent closes is closed. Returns 0, or an
/// error number (ENOSYS where the C library lacks it).
int csystem_spawn_close_from(void *actions, int from);
#endif
