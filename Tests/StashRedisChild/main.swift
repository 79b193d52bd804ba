// The child process of the Redis two-process test (filled in below).
