/* file.c - see file.h. */
#include "file.h"

#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every pointer file starts with this line (Git LFS specification, v1);
 * pointers are about 130 bytes, never more than 1024. */
static const char lfs_header[] = "version https://git-lfs.github.com/spec/v1";

int bert_file_is_lfs_pointer(const void *data, size_t len)
{
    size_t n = sizeof lfs_header - 1;
    return len >= n && len <= 1024 && memcmp(data, lfs_header, n) == 0;
}

char *bert_file_lfs_error(const char *path, size_t len)
{
    return bert_errorf("%s is a Git LFS pointer (%zu bytes), not the file itself: the model was "
                       "cloned without Git LFS. Fetch the real file in the model directory with "
                       "`git lfs install && git lfs pull`, or download it with "
                       "`huggingface-cli download <repo> --local-dir <dir>`", path, len);
}

char *bert_file_read(const char *path, size_t max_bytes, size_t *len, int *missing, char **err)
{
    *err = NULL;
    *len = 0;
    if (missing) *missing = 0;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && missing) *missing = 1;
        *err = bert_errorf("cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *err = bert_errorf("cannot read %s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        *err = bert_errorf("%s is not a regular file: replace it with the model's own file", path);
        goto done;
    }
    if ((uintmax_t)st.st_size > (uintmax_t)max_bytes) {
        *err = bert_errorf("%s is %jd bytes long, more than the %zu bytes a file of its kind may have",
                           path, (intmax_t)st.st_size, max_bytes);
        goto done;
    }
    size_t size = (size_t)st.st_size, got = 0;
    if (!(buf = malloc(size + 1))) {
        *err = bert_errorf("out of memory reading %s (%zu bytes)", path, size);
        goto done;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            *err = bert_errorf("cannot read %s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0) break;   /* the file shrank since fstat: take what is there */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *len = got;
    if (bert_file_is_lfs_pointer(buf, got)) *err = bert_file_lfs_error(path, got);
done:
    close(fd);
    if (*err) {
        free(buf);
        return NULL;
    }
    return buf;
}

char *bert_path_join(const char *dir, const char *name)
{
    size_t d = strlen(dir), n = strlen(name);
    while (d > 1 && dir[d - 1] == '/') d--;
    char *s = malloc(d + n + 2);
    if (!s) return NULL;
    memcpy(s, dir, d);
    s[d] = '/';
    memcpy(s + d + 1, name, n + 1);
    return s;
}
