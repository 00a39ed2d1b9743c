/* A benchmark whose memory is set by one allocating function and whose time by a loop that
   never allocates (tests/test_memory_metrics.py replaces the upper-case placeholders: the
   buffer's size and the loop's step). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB 1024

static char *__attribute__((noipa)) make_buffer(size_t size)
{
    char *buffer = malloc(size);
    if (buffer)
        memset(buffer, 1, size);  /* touched: resident */
    return buffer;
}

static unsigned __attribute__((noipa)) checksum(const char *buffer, size_t size)
{
    unsigned sum = 0;
    for (size_t i = 0; i < size; i += STEP)
        sum = sum * 31 + (unsigned char)buffer[i];
    return sum;
}

int main(void)
{
    size_t size = BUFFER_KIB * KIB;
    char *buffer = make_buffer(size);
    if (!buffer)
        return 1;
    printf("%u\n", checksum(buffer, size));
    free(buffer);
    return 0;
}
