/* Benchmark driver for yyjson, compiled by the build command of corpus/yyjson/selector.toml
 * together with the src/yyjson.c of the commit being built.
 *
 *     bench MODE REPEAT FILE [FILE2]
 *
 * read        yyjson_read FILE, REPEAT times (each document freed)
 * write       read once, yyjson_write (minified) REPEAT times
 * pretty      read once, yyjson_write with YYJSON_WRITE_PRETTY REPEAT times
 * mutable     read once, then REPEAT times: yyjson_doc_mut_copy, yyjson_mut_write,
 *             yyjson_mut_doc_imut_copy and yyjson_equals of the copy with the original
 * merge-patch read FILE and FILE2, then REPEAT times yyjson_merge_patch (RFC 7386) of
 *             FILE with FILE2 as the patch, and yyjson_mut_write of the result
 *
 * Only API present since yyjson 0.6.0 (2023) is used, so the driver builds at every
 * commit of the collected range.  It prints a checksum of what it made and exits 1 if
 * anything fails, so a broken commit shows up as a failed benchmark, not a fast one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yyjson.h"

static char *read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    char *text;
    long length;
    if (file == NULL || fseek(file, 0, SEEK_END) != 0 || (length = ftell(file)) < 0 || fseek(file, 0, SEEK_SET) != 0) {
        perror(path);
        exit(1);
    }
    text = malloc((size_t)length + 1);
    if (text == NULL || fread(text, 1, (size_t)length, file) != (size_t)length) {
        perror(path);
        exit(1);
    }
    text[length] = '\0';
    fclose(file);
    *size = (size_t)length;
    return text;
}

static yyjson_doc *read_or_die(const char *text, size_t size, const char *path)
{
    yyjson_read_err err;
    yyjson_doc *doc = yyjson_read_opts((char *)text, size, YYJSON_READ_NOFLAG, NULL, &err);
    if (doc == NULL) {
        fprintf(stderr, "%s: %s at %lu\n", path, err.msg, (unsigned long)err.pos);
        exit(1);
    }
    return doc;
}

static unsigned long checksum(const char *text, size_t size, unsigned long sum)
{
    size_t i;
    for (i = 0; i < size; i++)
        sum = sum * 31 + (unsigned char)text[i];
    return sum;
}

static void die(const char *what)
{
    fprintf(stderr, "%s failed\n", what);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *mode;
    long repeat, i;
    size_t size, length;
    char *text, *out;
    unsigned long sum = 0;
    yyjson_doc *doc;

    if (argc < 4 || (repeat = atol(argv[2])) < 1) {
        fprintf(stderr, "usage: %s read|write|pretty|mutable|merge-patch REPEAT FILE [FILE2]\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    text = read_file(argv[3], &size);

    if (strcmp(mode, "read") == 0) {
        for (i = 0; i < repeat; i++) {
            doc = read_or_die(text, size, argv[3]);
            sum += (unsigned long)yyjson_doc_get_val_count(doc);
            yyjson_doc_free(doc);
        }
    } else if (strcmp(mode, "write") == 0 || strcmp(mode, "pretty") == 0) {
        yyjson_write_flag flags = strcmp(mode, "pretty") == 0 ? YYJSON_WRITE_PRETTY : YYJSON_WRITE_NOFLAG;
        doc = read_or_die(text, size, argv[3]);
        for (i = 0; i < repeat; i++) {
            out = yyjson_write(doc, flags, &length);
            if (out == NULL)
                die("yyjson_write");
            sum = checksum(out, length, sum);
            free(out);
        }
        yyjson_doc_free(doc);
    } else if (strcmp(mode, "mutable") == 0) {
        doc = read_or_die(text, size, argv[3]);
        for (i = 0; i < repeat; i++) {
            yyjson_mut_doc *copy = yyjson_doc_mut_copy(doc, NULL);
            yyjson_doc *back;
            if (copy == NULL)
                die("yyjson_doc_mut_copy");
            out = yyjson_mut_write(copy, YYJSON_WRITE_NOFLAG, &length);
            if (out == NULL)
                die("yyjson_mut_write");
            sum = checksum(out, length, sum);
            free(out);
            back = yyjson_mut_doc_imut_copy(copy, NULL);
            if (back == NULL || !yyjson_equals(yyjson_doc_get_root(doc), yyjson_doc_get_root(back)))
                die("yyjson_mut_doc_imut_copy");
            yyjson_doc_free(back);
            yyjson_mut_doc_free(copy);
        }
        yyjson_doc_free(doc);
    } else if (strcmp(mode, "merge-patch") == 0 && argc > 4) {
        size_t patch_size;
        char *patch_text = read_file(argv[4], &patch_size);
        yyjson_doc *patch = read_or_die(patch_text, patch_size, argv[4]);
        doc = read_or_die(text, size, argv[3]);
        for (i = 0; i < repeat; i++) {
            yyjson_mut_doc *result = yyjson_mut_doc_new(NULL);
            yyjson_mut_val *root;
            if (result == NULL)
                die("yyjson_mut_doc_new");
            root = yyjson_merge_patch(result, yyjson_doc_get_root(doc), yyjson_doc_get_root(patch));
            if (root == NULL)
                die("yyjson_merge_patch");
            yyjson_mut_doc_set_root(result, root);
            out = yyjson_mut_write(result, YYJSON_WRITE_NOFLAG, &length);
            if (out == NULL)
                die("yyjson_mut_write");
            sum = checksum(out, length, sum);
            free(out);
            yyjson_mut_doc_free(result);
        }
        yyjson_doc_free(patch);
        yyjson_doc_free(doc);
        free(patch_text);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    free(text);
    printf("%s %lu\n", mode, sum);
    return 0;
}
