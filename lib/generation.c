/* The generation word's file: naming, publishing (daemon) and mapping (clients). A page of a
 * tmpfs file mapped shared by both: the daemon's atomic store is what every client loads. */
#include "generation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "randd.h"

#define WORD_FILE_SIZE 4096      /* a page: the word at offset 0, the rest zero */

int randd_generation_path(const char *socket, char *out, size_t len)
{
    /* As randd_open resolves it: never from the environment of a setuid program. */
    if (!socket)
        socket = secure_getenv("RANDD_SOCKET");
    if (!socket || !*socket)
        socket = RANDD_DEFAULT_SOCKET;
    return (size_t)snprintf(out, len, "%s.generation", socket) < len ? 0 : -ENAMETOOLONG;
}

uint64_t *randd_generation_publish(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    struct stat st;
    void *map;

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || (st.st_size < WORD_FILE_SIZE && ftruncate(fd, WORD_FILE_SIZE) < 0) ||
        fchmod(fd, 0644) < 0) {
        close(fd);
        return NULL;
    }
    map = mmap(NULL, WORD_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return map == MAP_FAILED ? NULL : map;
}

void randd_generation_bump(uint64_t *word)
{
    __atomic_add_fetch(word, 1, __ATOMIC_RELEASE);
}

const uint64_t *randd_generation_map(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    void *map = MAP_FAILED;

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= WORD_FILE_SIZE)
        map = mmap(NULL, WORD_FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return map == MAP_FAILED ? NULL : map;
}

void randd_generation_unmap(const uint64_t *word)
{
    if (word)
        munmap((void *)word, WORD_FILE_SIZE);
}

uint64_t randd_generation_load(const uint64_t *word)
{
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}
