/*
 * read_part.c: read a placement written by `grapeshot place --out placement.part` and print
 * each node's (each MPI rank's) partitions, one line per rank:
 *
 *     rank 0: 0 5 6 11
 *     rank 1: 1 2 7 8
 *
 * The .part file is METIS's partition-file format: line i (counting from 0) holds the node
 * of partition i, a decimal integer >= 0, and nothing else; partition ids flatten the
 * partition grid in C order (docs/formats.md). An MPI code does the same at start-up and
 * keeps the partitions of its own rank.
 *
 * Build and run (C99, no library but libc):
 *
 *     cc -std=c99 -O2 -Wall -o read_part examples/read_part.c
 *     ./read_part placement.part
 *
 * A bad file stops with one line naming it and the line, and exit status 1.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest line accepted: a node number is at most 10 digits (INT_MAX), plus blanks. */
#define LINE_MAX_CHARS 64

static const char *program = "read_part";

static void fail(const char *path, long line, const char *what) {
    if (line > 0)
        fprintf(stderr, "%s: %s: line %ld: %s\n", program, path, line, what);
    else
        fprintf(stderr, "%s: %s: %s\n", program, path, what);
    exit(1);
}

static int is_blank(const char *s) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

/* The node on one line: digits, surrounding blanks allowed; -1 if the line is not one.
   INT_MAX itself is refused so that the number of nodes, the largest + 1, is an int. */
static long parse_node(const char *text) {
    while (*text == ' ' || *text == '\t')
        text++;
    if (*text < '0' || *text > '9')
        return -1; /* strtol would also take a sign */
    char *end;
    errno = 0;
    long node = strtol(text, &end, 10);
    if (errno == ERANGE || node >= INT_MAX || !is_blank(end))
        return -1;
    return node;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.part\n", program);
        return 2;
    }
    const char *path = argv[1];
    FILE *file = fopen(path, "r");
    if (file == NULL)
        fail(path, 0, strerror(errno));

    /* node_of[i]: the node of partition i, grown as lines are read. */
    int *node_of = NULL;
    long parts = 0, capacity = 0, line = 0, first_blank = 0;
    int nodes = 0;
    char buffer[LINE_MAX_CHARS + 2];
    while (fgets(buffer, sizeof buffer, file) != NULL) {
        line++;
        size_t length = strlen(buffer);
        if (length > 0 && buffer[length - 1] != '\n' && !feof(file))
            fail(path, line, "line too long; expected one node number");
        if (is_blank(buffer)) {
            /* Blank lines may end the file (an editor's last newline), not sit inside it:
               they would shift every partition after them. */
            if (first_blank == 0)
                first_blank = line;
            continue;
        }
        if (first_blank != 0)
            fail(path, first_blank, "blank line; expected one node number per line");
        long node = parse_node(buffer);
        if (node < 0)
            fail(path, line, "expected a node number in [0, 2147483646]");
        if (parts == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            int *grown = realloc(node_of, (size_t)capacity * sizeof *node_of);
            if (grown == NULL)
                fail(path, line, "out of memory");
            node_of = grown;
        }
        node_of[parts++] = (int)node;
        if (node >= nodes)
            nodes = (int)node + 1;
    }
    if (ferror(file))
        fail(path, 0, strerror(errno));
    fclose(file);
    if (parts == 0)
        fail(path, 0, "no partitions; expected one node number per line");

    /* Partitions grouped by node in one pass (a counting sort): first[r] is where rank r's
       partitions start in by_node, in increasing partition order. */
    long *first = calloc((size_t)nodes + 1, sizeof *first);
    long *by_node = malloc((size_t)parts * sizeof *by_node);
    if (first == NULL || by_node == NULL)
        fail(path, 0, "out of memory");
    for (long i = 0; i < parts; i++)
        first[node_of[i] + 1]++;
    for (int r = 0; r < nodes; r++)
        first[r + 1] += first[r];
    long *next = malloc((size_t)nodes * sizeof *next);
    if (next == NULL)
        fail(path, 0, "out of memory");
    memcpy(next, first, (size_t)nodes * sizeof *next);
    for (long i = 0; i < parts; i++)
        by_node[next[node_of[i]]++] = i;

    for (int r = 0; r < nodes; r++) {
        printf("rank %d:", r);
        for (long k = first[r]; k < first[r + 1]; k++)
            printf(" %ld", by_node[k]);
        printf("\n");
    }
    free(next);
    free(by_node);
    free(first);
    free(node_of);
    return 0;
}
