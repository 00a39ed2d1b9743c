/* Benchmark driver for cJSON, compiled by the build command of corpus/cjson/selector.toml
 * together with the cJSON.c and cJSON_Utils.c of the commit being built.
 *
 *     bench MODE REPEAT FILE [FILE2]
 *
 * parse      cJSON_Parse FILE, REPEAT times (each tree deleted)
 * print      parse once, cJSON_Print (formatted) REPEAT times
 * compact    parse once, cJSON_PrintUnformatted REPEAT times
 * minify     cJSON_Minify a fresh copy of the text, REPEAT times
 * duplicate  parse once, cJSON_Duplicate (recursive) and cJSON_Compare REPEAT times
 * patch      parse FILE and FILE2, then REPEAT times: cJSONUtils_GeneratePatches between
 *            copies of the two, cJSONUtils_ApplyPatches to a copy of FILE, and
 *            cJSON_Compare of the result with FILE2
 *
 * Only the API of cJSON 1.5.4 (2017) is used, so the driver builds at every commit of
 * the collected range.  It prints a checksum of what it made, and exits 1 if parsing or
 * printing fails, so a broken commit shows up as a failed benchmark rather than a fast
 * one.  A patch round trip that does not give FILE2 is only reported ("mismatch"):
 * cJSON_Utils of 2017-2018 had bugs (its list sort among them) that make it so, and the
 * benchmark is meant to measure those commits too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cJSON.h"
#include "cJSON_Utils.h"

static char *read_file(const char *path)
{
    FILE *file = fopen(path, "rb");
    char *text;
    long size;
    if (file == NULL || fseek(file, 0, SEEK_END) != 0 || (size = ftell(file)) < 0 || fseek(file, 0, SEEK_SET) != 0) {
        perror(path);
        exit(1);
    }
    text = malloc((size_t)size + 1);
    if (text == NULL || fread(text, 1, (size_t)size, file) != (size_t)size) {
        perror(path);
        exit(1);
    }
    text[size] = '\0';
    fclose(file);
    return text;
}

static cJSON *parse_or_die(const char *text, const char *path)
{
    cJSON *root = cJSON_Parse(text);
    if (root == NULL) {
        fprintf(stderr, "%s: cJSON_Parse failed\n", path);
        exit(1);
    }
    return root;
}

static unsigned long checksum(const char *text, unsigned long sum)
{
    for (; *text; text++)
        sum = sum * 31 + (unsigned char)*text;
    return sum;
}

static unsigned long print_times(cJSON *root, long repeat, int formatted)
{
    unsigned long sum = 0;
    long i;
    for (i = 0; i < repeat; i++) {
        char *text = formatted ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
        if (text == NULL) {
            fprintf(stderr, "printing failed\n");
            exit(1);
        }
        sum = checksum(text, sum);
        cJSON_free(text);
    }
    return sum;
}

int main(int argc, char **argv)
{
    const char *mode;
    long repeat, i;
    char *text;
    unsigned long sum = 0, mismatches = 0;
    cJSON *root;

    if (argc < 4 || (repeat = atol(argv[2])) < 1) {
        fprintf(stderr, "usage: %s parse|print|compact|minify|duplicate|patch REPEAT FILE [FILE2]\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    text = read_file(argv[3]);

    if (strcmp(mode, "parse") == 0) {
        for (i = 0; i < repeat; i++) {
            root = parse_or_die(text, argv[3]);
            sum += (unsigned long)cJSON_GetArraySize(root);
            cJSON_Delete(root);
        }
    } else if (strcmp(mode, "print") == 0 || strcmp(mode, "compact") == 0) {
        root = parse_or_die(text, argv[3]);
        sum = print_times(root, repeat, strcmp(mode, "print") == 0);
        cJSON_Delete(root);
    } else if (strcmp(mode, "minify") == 0) {
        size_t size = strlen(text) + 1;
        char *copy = malloc(size);
        for (i = 0; i < repeat; i++) {
            memcpy(copy, text, size);
            cJSON_Minify(copy);
            sum = checksum(copy, sum);
        }
        free(copy);
    } else if (strcmp(mode, "duplicate") == 0) {
        root = parse_or_die(text, argv[3]);
        for (i = 0; i < repeat; i++) {
            cJSON *copy = cJSON_Duplicate(root, 1);
            if (copy == NULL || !cJSON_Compare(root, copy, 1)) {
                fprintf(stderr, "duplicate differs\n");
                return 1;
            }
            sum += (unsigned long)cJSON_GetArraySize(copy);
            cJSON_Delete(copy);
        }
        cJSON_Delete(root);
    } else if (strcmp(mode, "patch") == 0 && argc > 4) {
        char *other_text = read_file(argv[4]);
        cJSON *other = parse_or_die(other_text, argv[4]);
        root = parse_or_die(text, argv[3]);
        for (i = 0; i < repeat; i++) {
            /* GeneratePatches sorts the objects it compares: give it fresh copies each time */
            cJSON *from = cJSON_Duplicate(root, 1), *to = cJSON_Duplicate(other, 1);
            cJSON *patches = cJSONUtils_GeneratePatches(from, to);
            cJSON *target = cJSON_Duplicate(root, 1);
            if (patches == NULL || target == NULL) {
                fprintf(stderr, "patch generation failed\n");
                return 1;
            }
            if (cJSONUtils_ApplyPatches(target, patches) != 0 || !cJSON_Compare(target, other, 1))
                mismatches++;
            sum += (unsigned long)cJSON_GetArraySize(patches);
            cJSON_Delete(from);
            cJSON_Delete(to);
            cJSON_Delete(patches);
            cJSON_Delete(target);
        }
        cJSON_Delete(other);
        free(other_text);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    free(text);
    printf("%s %lu%s\n", mode, sum, mismatches ? " mismatch" : "");
    return 0;
}
